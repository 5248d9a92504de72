/* trace_int.h — private to model/trace.c, trace_records.c and trace_uses.c: the steps of
 * building a model that the three files share. The module's contract is trace.h. */
#ifndef ANA_TRACE_INT_H
#define ANA_TRACE_INT_H

#include "model/trace.h"

/* Sets up the uses' storage (trace_uses.c; from ana_trace_new). */
void ana_trace_uses_init(ana_trace *t);
/* Keeps the device pointers a record's call used (trace_uses.c; from ana_trace_add). */
void ana_trace_uses_of(ana_trace *t, const ana_record *r);
/* Sorts the uses and adds the pointers of the tables kernels read (trace_uses.c; from
 * ana_trace_finish, once every record is in). */
void ana_trace_uses_finish(ana_trace *t);
/* Gives a launch recorded without its function the kernel of its GPU_KERNEL
 * (trace_records.c; from ana_trace_finish, after the calls are indexed). */
void ana_trace_name_launches(ana_trace *t);

#endif
