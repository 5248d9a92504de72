/* jsonr.c — placeholder: the streaming JSON reader of the Kineto importer. */
#include "jsonr.h"

typedef int ana_jsonr_placeholder;
