/* trace_records — prints the API records of a trace (ALLOC, FREE, VMM, MEMINFO, LAUNCH), one JSON
 * object a line, with every field; for the scenario tests, which check them against what
 * the traced program printed. Exit 0, or 2 when the trace cannot be read. */
#include <inttypes.h>
#include <stdio.h>

#include "reader.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trace_records TRACE\n");
        return 2;
    }
    ana_reader *rd;
    ana_error err;
    char msg[1024];
    if (ana_reader_open(argv[1], &rd, &err) < 0) {
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "trace_records: %s\n", msg);
        return 2;
    }
    ana_record r;
    int n;
    while ((n = ana_reader_next(rd, &r, &err)) == 1) {
        if (r.kind == ANA_K_ALLOC) {
            const ana_rec_alloc *a = &r.u.alloc;
            printf("{\"kind\":\"ALLOC\",\"api\":%" PRIu64 ",\"ret\":%" PRId64 ",\"ptr\":%" PRIu64
                   ",\"size\":%" PRIu64 ",\"device\":%" PRId64 ",\"flags\":%" PRIu64 ",\"stack\":%" PRIu64
                   ",\"via\":%" PRIu64 "}\n",
                   a->api, a->ret, a->ptr, a->size, a->device, a->flags, a->stack, a->via);
        } else if (r.kind == ANA_K_FREE) {
            const ana_rec_free *f = &r.u.free;
            printf("{\"kind\":\"FREE\",\"api\":%" PRIu64 ",\"ret\":%" PRId64 ",\"ptr\":%" PRIu64
                   ",\"stack\":%" PRIu64 ",\"via\":%" PRIu64 "}\n",
                   f->api, f->ret, f->ptr, f->stack, f->via);
        } else if (r.kind == ANA_K_VMM) {
            const ana_rec_vmm *v = &r.u.vmm;
            printf("{\"kind\":\"VMM\",\"api\":%" PRIu64 ",\"ret\":%" PRId64 ",\"va\":%" PRIu64 ",\"size\":%" PRIu64
                   ",\"handle\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"device\":%" PRId64 ",\"flags\":%" PRIu64
                   ",\"stack\":%" PRIu64 ",\"via\":%" PRIu64 "}\n",
                   v->api, v->ret, v->va, v->size, v->handle, v->offset, v->device, v->flags, v->stack, v->via);
        } else if (r.kind == ANA_K_LAUNCH) {
            const ana_rec_launch *l = &r.u.launch;
            printf("{\"kind\":\"LAUNCH\",\"api\":%" PRIu64 ",\"ret\":%" PRId64 ",\"kernel\":%" PRIu64
                   ",\"grid\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "],\"block\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64
                   "],\"shmem\":%" PRIu64 ",\"stream\":%" PRIu64 ",\"via\":%" PRIu64 "}\n",
                   l->api, l->ret, l->kernel, l->grid_x, l->grid_y, l->grid_z, l->block_x, l->block_y, l->block_z,
                   l->shmem, l->stream, l->via);
        } else if (r.kind == ANA_K_MEMINFO) {
            printf("{\"kind\":\"MEMINFO\",\"free\":%" PRIu64 ",\"total\":%" PRIu64 ",\"reason\":%" PRIu64 "}\n",
                   r.u.meminfo.free, r.u.meminfo.total, r.u.meminfo.reason);
        }
    }
    if (n < 0) {
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "trace_records: %s\n", msg);
        ana_reader_close(rd);
        return 2;
    }
    ana_reader_close(rd);
    return 0;
}
