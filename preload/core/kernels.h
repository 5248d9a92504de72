/* kernels.h — the device-function registry: host stub / kernel handle -> kernel id -> name (kernels.c). */
#ifndef ANA_KERNELS_H
#define ANA_KERNELS_H

#include <stdint.h>
#include "defs.h"

void ana_kernel_register(const void *host_fn, const char *name);
void ana_kernel_map_handle(const void *handle, const void *host_fn);
uint64_t ana_kernel_id_of_fn(const void *host_fn);
uint64_t ana_kernel_id_of_handle(const void *handle);
void ana_kernels_emit_new(void (*fn)(uint64_t id, uint64_t host_fn, const char *name, void *arg), void *arg);
void ana_kernels_atfork_child(void);
/* Collector thread only: the id of the kernel called `name` (a GPU activity record's
 * kernel): a registered kernel's id if one has that name, else a new entry with host_fn 0
 * (written as a KERNEL record by the next ana_kernels_emit_new). 0 when the tables are full. */
uint64_t ana_kernel_intern_name(const char *name);

#endif
