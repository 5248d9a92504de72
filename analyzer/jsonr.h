/* jsonr.h — placeholder: the streaming JSON reader of the Kineto importer (kineto.h). */
#ifndef ANA_JSONR_H
#define ANA_JSONR_H
#endif
