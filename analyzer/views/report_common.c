/* report_common.c — what every report writer shares (report_write.h): a call stack as
 * the text and the JSON print it, the memory categories as a JSON object, kernel names
 * and labels, the "process" object, --top. Part of views/: the bottom of the views, called
 * by the report's sections, the job report and `anatomist info`; calls analyses/ and
 * model/. */
#include "views/report_write.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

#define ANA_RT_FRAMES 8 /* frames shown per stack in the text */

const char *const ana_memcpy_dir_names[ANA_MEMCPY_DIRS] = {
    "H2H", "H2D", "D2H", "D2D", "default", "other",
};

size_t ana_report_limit(const ana_report *r, size_t n)
{
    return r->opt.top && r->opt.top < n ? r->opt.top : n;
}

char *ana_report_kernel_label(const ana_trace_kernel *k, size_t max)
{
    char *name = k ? ana_report_kernel_name(k) : ana_xstrdup("(unknown function)");
    if (strlen(name) > max)
        strcpy(name + max - 3, "...");
    return name;
}

void ana_report_json_kernel_name(ana_json *j, const ana_trace_kernel *k)
{
    char *name = k && k->name ? ana_report_kernel_name(k) : NULL;
    ana_json_kstr(j, "name", name);
    ana_json_kstr(j, "mangled", k ? k->name : NULL);
    free(name);
}

static const char *ana_rt_base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path;
}

static void ana_rt_frame(FILE *o, int idx, const ana_frame *f)
{
    fprintf(o, "        #%d %s", idx, f->function ? f->function : "??");
    if (f->file)
        fprintf(o, " at %s:%lld", f->file, (long long)f->line);
    if (f->python)
        fprintf(o, " [python]\n");
    else if (f->module)
        fprintf(o, " (%s+0x%llx)\n", ana_rt_base(f->module), (unsigned long long)f->offset);
    else
        fprintf(o, " (0x%llx)\n", (unsigned long long)f->address);
}

void ana_report_text_stack(FILE *o, const ana_report *r, uint64_t stack)
{
    const uint64_t *ip;
    size_t n = ana_stacks_frames(&r->t->stacks, stack, &ip);
    int shown = 0;
    if (stack == ANA_MEM_STACK_DRIVER) {
        fprintf(o, "        (seen by the driver only: GPU_MEMORY records, no call stack)\n");
        return;
    }
    if (n == 0) {
        if (stack)
            fprintf(o, "        (stack %llu: definition missing from the trace)\n",
                    (unsigned long long)stack);
        else
            fprintf(o, "        (no stack captured)\n");
        return;
    }
    /* With Python frames: the innermost native frame (what made the call), then the
     * native frames down to the first Python frame folded into one line (an allocator's
     * or an extension's call chain), so that the Python frames are at the head. */
    size_t first_py = n, last_py = n;
    for (size_t i = 0; i < n; i++)
        if (ana_py_is_frame(ip[i])) {
            first_py = first_py == n ? i : first_py;
            last_py = i;
        }
    int at_main = 0, folded = 0;
    for (size_t i = 0; i < n && shown < ANA_RT_FRAMES && !at_main; i++) {
        if (last_py < n && i > last_py) {
            at_main = 1; /* below the outermost Python frame: the interpreter's start-up */
            break;
        }
        const ana_frame *f = ana_sym_lookup(r->sym, ip[i]);
        if (ana_sym_is_profiler(f))
            continue;
        if (first_py < n && i < first_py && shown == 1 && !folded) {
            const ana_frame *last = ana_sym_lookup(r->sym, ip[first_py - 1]);
            char buf[512];
            if (first_py - i > 1)
                fprintf(o, "        ... %zu native frames, down to %s\n", first_py - i,
                        ana_sym_frame_label(last, buf, sizeof(buf)));
            else
                ana_rt_frame(o, shown++, last);
            folded = 1;
            i = first_py - 1;
            continue;
        }
        ana_rt_frame(o, shown++, f);
        /* Below main are only the C runtime's start-up frames: the text leaves them out
         * (the JSON keeps every frame). */
        at_main = !f->python && f->function && strcmp(f->function, "main") == 0;
    }
    if ((!at_main || last_py < n) && n > (size_t)shown)
        fprintf(o, "        ... (%zu frames in all)\n", n);
}

static void ana_rj_frame(ana_json *j, const ana_frame *f)
{
    ana_json_obj_begin(j);
    ana_json_kstr(j, "function", f->function);
    ana_json_kstr(j, "file", f->file);
    ana_json_key(j, "line");
    if (f->line > 0)
        ana_json_i64(j, f->line);
    else
        ana_json_null(j);
    ana_json_kstr(j, "module", f->module);
    ana_json_kstr(j, "language", f->python ? "python" : "native");
    ana_json_ku64(j, "offset", f->offset);
    ana_json_ku64(j, "address", f->address);
    ana_json_obj_end(j);
}

void ana_report_json_stack(ana_json *j, const ana_report *r, uint64_t stack)
{
    const uint64_t *ip;
    size_t n = ana_stacks_frames(&r->t->stacks, stack, &ip);
    ana_json_ku64(j, "stack_id", stack == ANA_MEM_STACK_DRIVER ? 0 : stack);
    ana_json_key(j, "stack");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < n; i++)
        ana_rj_frame(j, ana_sym_lookup(r->sym, ip[i]));
    ana_json_arr_end(j);
}

void ana_report_json_categories(ana_json *j, const char *key, const uint64_t by[ANA_MCAT_COUNT])
{
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        ana_json_ku64(j, ana_mcat_name(c), by[c]);
    ana_json_obj_end(j);
}

static void ana_json_signed_or_null(ana_json *j, const char *key, int64_t v)
{
    ana_json_key(j, key);
    if (v < 0)
        ana_json_null(j);
    else
        ana_json_i64(j, v);
}

void ana_json_process(ana_json *j, const ana_trace *t)
{
    const ana_trace_process *p = &t->process;
    ana_json_key(j, "process");
    if (!p->present) {
        ana_json_null(j);
        return;
    }
    ana_json_obj_begin(j);
    ana_json_ku64(j, "pid", p->pid);
    ana_json_ku64(j, "ppid", p->ppid);
    ana_json_kstr(j, "host", p->host);
    ana_json_kstr(j, "exe", p->exe);
    ana_json_key(j, "argv");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < p->argc; i++)
        ana_json_str(j, p->argv[i]);
    ana_json_arr_end(j);
    ana_json_signed_or_null(j, "rank", p->rank);
    ana_json_signed_or_null(j, "local_rank", p->local_rank);
    ana_json_signed_or_null(j, "world_size", p->world_size);
    ana_json_ku64(j, "realtime_ns", p->realtime_ns);
    ana_json_ku64(j, "start_ns", ana_trace_rel_ns(t, p->time_ns));
    ana_json_obj_end(j);
}
