/* cmd_info.c — `anatomist info TRACE [--json]`: what a trace file holds.
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "cli/cli.h"
#include "model/json.h"
#include "views/report_write.h"
#include "model/util.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ana_info_usage[] =
    "Usage: anatomist info TRACE [--json] [-j N]\n"
    "\n"
    "Describes a trace file: format version, size and compression, the profiled process,\n"
    "how many records of each kind it holds, dropped records, time span, and how the trace\n"
    "ended (exit: the process finished; recovered: it died first, and what it had not written\n"
    "was read from its live file, TRACE.live; truncated: it ended without END and there is\n"
    "no live file; torn:\n"
    "it died in the middle of a write, and the incomplete tail was discarded).\n"
    "\n"
    "Options:\n"
    "  --json         print JSON (schema anatomist.info/1, see docs/report-schema.md)\n"
    "  -j, --jobs N   threads that read the trace ahead of the command (default:\n"
    "                 one per online CPU; 1: none, the command reads it alone)\n"
    "  -h, --help     show this help\n"
    "\n"
    "Examples:\n"
    "  anatomist info anatomist-1234.anat\n"
    "  anatomist info --json anatomist-1234.anat | jq .records\n"
    "\n"
    "Exit status: 0 success, 2 usage error or unreadable/corrupt trace.\n";

/* ana_kind_name lowercased ("ALLOC" -> "alloc"); NULL for unknown kinds. */
static const char *ana_info_kind_key(uint32_t kind, char *buf, size_t cap)
{
    const char *name = ana_kind_name(kind);
    if (!name)
        return NULL;
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++)
        buf[i] = (char)tolower((unsigned char)name[i]);
    buf[i] = 0;
    return buf;
}

static double ana_info_ratio(const ana_trace *t)
{
    return t->stats.file_bytes ? (double)t->stats.raw_bytes / (double)t->stats.file_bytes : 0.0;
}

static void ana_info_json_records(ana_json *j, const ana_trace *t)
{
    char key[32];
    ana_json_key(j, "records");
    ana_json_obj_begin(j);
    for (uint32_t k = ANA_K_SEGMENT + 1; k < ANA_K_COUNT; k++)
        if (ana_info_kind_key(k, key, sizeof(key)))
            ana_json_ku64(j, key, t->counts[k]);
    ana_json_ku64(j, "unknown", t->stats.unknown_records);
    ana_json_obj_end(j);
}

static void ana_info_json(const ana_trace *t)
{
    ana_json j;
    ana_json_init(&j, stdout);
    ana_json_obj_begin(&j);
    ana_json_kstr(&j, "schema", "anatomist.info/1");
    ana_json_kstr(&j, "path", t->path);
    ana_json_kstr(&j, "source", t->source);
    ana_json_key(&j, "format");
    ana_json_obj_begin(&j);
    ana_json_ku64(&j, "major", t->stats.major);
    ana_json_ku64(&j, "minor", t->stats.minor);
    ana_json_ku64(&j, "time_resolution_ns", 1ull << t->stats.time_shift);
    ana_json_obj_end(&j);
    ana_json_ku64(&j, "file_bytes", t->stats.file_bytes);
    ana_json_ku64(&j, "chunks", t->stats.chunks);
    ana_json_ku64(&j, "packed_chunks", t->stats.packed_chunks);
    ana_json_ku64(&j, "raw_bytes", t->stats.raw_bytes);
    ana_json_kdbl(&j, "compression_ratio", ana_info_ratio(t));
    ana_info_json_records(&j, t);
    ana_json_ku64(&j, "dropped", t->dropped_records);
    ana_json_ku64(&j, "dropped_bytes", t->dropped_bytes);
    ana_json_kstr(&j, "ended", ana_ended_name(t->stats.ended));
    ana_json_key(&j, "end_reason");
    if (t->has_end)
        ana_json_u64(&j, t->end_reason);
    else
        ana_json_null(&j);
    ana_json_kstr(&j, "end_detail", t->has_end ? t->end_detail : NULL);
    ana_json_ku64(&j, "torn_bytes", t->stats.torn_bytes);
    ana_json_ku64(&j, "recovered_records", t->stats.recovered_records);
    ana_json_ku64(&j, "recovered_threads", t->stats.recovered_threads);
    ana_json_ku64(&j, "recovered_bad_bytes", t->stats.recovered_bad_bytes);
    ana_json_kstr(&j, "live_error", t->stats.live_error[0] ? t->stats.live_error : NULL);
    ana_json_ku64(&j, "first_ns", t->has_time ? t->first_ns : 0);
    ana_json_ku64(&j, "last_ns", t->has_time ? t->last_ns : 0);
    ana_json_ku64(&j, "span_ns", t->has_time ? t->last_ns - t->first_ns : 0);
    ana_json_process(&j, t);
    ana_json_key(&j, "info");
    ana_json_obj_begin(&j);
    for (size_t i = 0; i < t->n_info; i++)
        ana_json_kstr(&j, t->info[i].key, t->info[i].value);
    ana_json_obj_end(&j);
    ana_json_obj_end(&j);
    ana_json_finish(&j);
}

static void ana_info_text_process(const ana_trace *t)
{
    const ana_trace_process *p = &t->process;
    if (!p->present) {
        printf("process      (no PROCESS record)\n");
        return;
    }
    char *cmd = ana_report_cmdline(t);
    printf("process      pid %llu, parent %llu, host %s", (unsigned long long)p->pid,
           (unsigned long long)p->ppid, p->host);
    if (p->rank >= 0)
        printf(", rank %lld (local %lld) of %lld", (long long)p->rank, (long long)p->local_rank,
               (long long)p->world_size);
    printf("\ncommand      %s\n", cmd);
    free(cmd);
}

static void ana_info_text(const ana_trace *t)
{
    char a[32], b[32], key[32];
    const ana_reader_stats *st = &t->stats;
    printf("trace        %s\n", t->path);
    if (strcmp(t->source, "kineto") == 0)
        printf("format       PyTorch profiler (Kineto) JSON, imported (docs/kineto-import.md)\n");
    else if (st->time_shift)
        printf("format       %u.%u, times in ticks of %llu ns\n", st->major, st->minor,
               1ull << st->time_shift);
    else
        printf("format       %u.%u\n", st->major, st->minor);
    ana_fmt_bytes(st->file_bytes, a, sizeof(a));
    ana_fmt_bytes(st->raw_bytes, b, sizeof(b));
    printf("size         %s in %llu chunks (%llu bytes), %s of records (%llu bytes), "
           "ratio %.2f\n", a, (unsigned long long)st->chunks, (unsigned long long)st->file_bytes,
           b, (unsigned long long)st->raw_bytes, ana_info_ratio(t));
    if (st->chunks)
        printf("packed       %llu of %llu chunks (columns; docs/trace-format.md, \"Packed chunks\")\n",
               (unsigned long long)st->packed_chunks, (unsigned long long)st->chunks);
    printf("ended        %s", ana_ended_name(st->ended));
    if (t->has_end)
        printf(" (reason %llu%s%s)", (unsigned long long)t->end_reason,
               t->end_detail[0] ? ": " : "", t->end_detail);
    if (st->torn_bytes)
        printf(", %llu torn bytes discarded", (unsigned long long)st->torn_bytes);
    if (st->recovered_records)
        printf(", %llu records of %llu threads read from %s.live", (unsigned long long)st->recovered_records,
               (unsigned long long)st->recovered_threads, t->path);
    if (st->live_error[0])
        printf("\nlive file    not read: %s", st->live_error);
    ana_fmt_ns(t->has_time ? t->last_ns - t->first_ns : 0, a, sizeof(a));
    printf("\ntime span    %s\n", a);
    ana_info_text_process(t);
    printf("dropped      %llu records (%llu bytes)\n", (unsigned long long)t->dropped_records,
           (unsigned long long)t->dropped_bytes);
    printf("records\n");
    for (uint32_t k = ANA_K_SEGMENT + 1; k < ANA_K_COUNT; k++)
        if (ana_info_kind_key(k, key, sizeof(key)))
            printf("  %-12s %12llu\n", key, (unsigned long long)t->counts[k]);
    printf("  %-12s %12llu\n", "unknown", (unsigned long long)st->unknown_records);
    for (size_t i = 0; i < t->n_info; i++)
        printf("%-12s %s = %s\n", i ? "" : "settings", t->info[i].key, t->info[i].value);
}

int ana_cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 256 },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    int json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:", opts, NULL)) != -1) {
        if (c == 256)
            json = 1;
        else if (c == 'j') {
            if (ana_cli_jobs("info", optarg) != 0)
                return ANA_EXIT_BAD;
        } else if (c == 'h')
            return fputs(ana_info_usage, stdout), ANA_EXIT_OK;
        else
            return ana_cli_bad_option("info", argv, c);
    }
    const char *path = ana_cli_one_trace("info", argc, argv);
    if (!path)
        return ANA_EXIT_BAD;
    ana_text_names(!json); /* the trace's strings escaped in text (util.h) */
    ana_trace *t = ana_cli_load(path, ANA_LOAD_SUMMARY);
    if (!t)
        return ANA_EXIT_BAD;
    if (json)
        ana_info_json(t);
    else
        ana_info_text(t);
    ana_trace_free(t);
    return ANA_EXIT_OK;
}
