/* steps_dump — prints what analyzer/analyses/steps.h finds in a trace, as one JSON document:
 *
 *     {"method":"nvtx","name":"step","median_ns":...,"phases":"nvtx","why":"",
 *      "steps":[{"start_ns":...,"end_ns":...,"calls":...,"phases":"nvtx"}, ...],
 *      "calls":[{"time":...,"tid":...,"kind":"LAUNCH","corr":...,"kernel":"_Z7adamw...",
 *                "step":0,"phase":"optimizer"}, ...]}
 *
 * "calls" lists every LAUNCH/MEMCPY/MEMSET call of the loaded model in its order
 * (t->calls: by time), with its step (-1: none) and phase; "kernel" is the launch's kernel
 * name (null for copies and unnamed kernels). For tests (tests/scenario/test_steps.py)
 * until the report prints steps. Exit status: 0, or 2 with a message when the trace
 * cannot be read. */
#include <stdio.h>

#include "model/json.h"
#include "records.h"
#include "analyses/steps.h"
#include "import/import.h"
#include "model/trace.h"

static const char *kind_name(int kind)
{
    return kind == ANA_K_LAUNCH ? "LAUNCH" : kind == ANA_K_MEMCPY ? "MEMCPY" : "MEMSET";
}

static void dump_calls(ana_json *j, const ana_trace *t, const ana_steps *s)
{
    ana_json_key(j, "calls");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < t->n_calls; i++) {
        ana_api_call call = ana_trace_call(t, i);
        const ana_api_call *c = &call;
        const ana_call_site *cs = ana_trace_call_site(t, c);
        const ana_trace_kernel *k = cs->kind == ANA_K_LAUNCH ? ana_trace_kernel_by_id(t, ana_trace_wide(t, c->arg_w)) : NULL;
        ana_json_obj_begin(j);
        ana_json_ku64(j, "time", c->time_ns);
        ana_json_ku64(j, "tid", ana_trace_wide(t, cs->tid_w));
        ana_json_kstr(j, "kind", kind_name(cs->kind));
        ana_json_ku64(j, "corr", ana_trace_wide(t, c->corr_w));
        ana_json_ku64(j, "arg", ana_trace_wide(t, c->arg_w));
        ana_json_kstr(j, "kernel", k ? k->name : NULL);
        ana_json_ki64(j, "step", ana_steps_step(s, i));
        ana_json_kstr(j, "phase", ana_phase_name(ana_steps_phase(s, i)));
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: steps_dump TRACE\n");
        return 2;
    }
    ana_trace *t;
    ana_error err;
    if (ana_import_load(argv[1], ANA_LOAD_ALL, &t, &err) != 0) {
        char msg[512];
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "steps_dump: %s\n", msg);
        return 2;
    }
    ana_steps s;
    ana_steps_find(t, &s);
    ana_json j;
    ana_json_init(&j, stdout);
    ana_json_obj_begin(&j);
    ana_json_kstr(&j, "method", ana_steps_method_name(s.method));
    ana_json_kstr(&j, "name", s.name);
    ana_json_ku64(&j, "median_ns", s.median_ns);
    ana_json_kstr(&j, "phases", ana_phases_method_name(s.phases));
    ana_json_kstr(&j, "why", s.why);
    ana_json_key(&j, "steps");
    ana_json_arr_begin(&j);
    for (size_t i = 0; i < s.n_steps; i++) {
        ana_json_obj_begin(&j);
        ana_json_ku64(&j, "start_ns", s.steps[i].start_ns);
        ana_json_ku64(&j, "end_ns", s.steps[i].end_ns);
        ana_json_ku64(&j, "calls", s.steps[i].calls);
        ana_json_kstr(&j, "phases", ana_phases_method_name(s.steps[i].phases));
        ana_json_obj_end(&j);
    }
    ana_json_arr_end(&j);
    dump_calls(&j, t, &s);
    ana_json_obj_end(&j);
    ana_json_finish(&j);
    ana_steps_free(&s);
    ana_trace_free(t);
    return 0;
}
