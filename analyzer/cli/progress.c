/* progress.c — the progress line of a long trace load, on standard error when it is a
 * terminal: "anatomist: reading NAME: 12.3 M records, 45%, 8.1 M records/s, 3 s left",
 * redrawn in place at most 5 times a second, shown only once a load has taken half a
 * second (short work stays silent), and wiped when the load ends so that what follows
 * starts on a clean line. Then each long stage of the work that follows (model/stage.h:
 * putting spilled records in order, each analysis of a report) as it begins:
 * "anatomist: NAME: classifying the GPU time (5 of 8), 41 s in", counted from the start
 * of the command's first load, and wiped when the stages end. On a pipe or a file
 * nothing is written: outputs and messages stay byte-exact. Part of cli/: installed by main.c (ana_cli_progress_init);
 * calls import/ (ana_import_set_progress) and model/ (ana_stage_set, ana_text_escape). */
#define _GNU_SOURCE
#include "cli/cli.h"
#include "import/import.h"
#include "model/stage.h"
#include "model/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SHOW_AFTER_NS = 500000000, REDRAW_NS = 200000000 };

static struct {
    uint64_t start_ns, drawn_ns;
    uint64_t first_ns; /* when the command's first load or stage began */
    size_t width;      /* columns of the line on screen, 0 when none is */
    char name[64];     /* the trace's file name as shown (escaped, cut to fit) */
} line;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void wipe(void)
{
    if (line.width)
        fprintf(stderr, "\r%*s\r", (int)line.width, "");
    line.width = 0;
}

/* Draws text over the line on screen (padded over a longer one drawn before). */
static void show(const char *buf, uint64_t now)
{
    size_t w = strlen(buf);
    fprintf(stderr, "\r%s%*s", buf, line.width > w ? (int)(line.width - w) : 0, "");
    fflush(stderr);
    line.width = w > line.width ? w : line.width;
    line.drawn_ns = now;
}

static void draw(const ana_import_progress *p, uint64_t now)
{
    double s = (double)(now - line.start_ns) / 1e9;
    const char *name = line.name;
    char left[32] = "";
    if (p->bytes_total && p->bytes_read && p->bytes_read <= p->bytes_total) {
        double rest = s * (double)(p->bytes_total - p->bytes_read) / (double)p->bytes_read;
        snprintf(left, sizeof(left), rest < 10 ? ", %.1f s left" : ", %.0f s left", rest);
    }
    char buf[512];
    int share = p->bytes_total ? (int)(100.0 * (double)p->bytes_read / (double)p->bytes_total) : 0;
    snprintf(buf, sizeof(buf), "anatomist: reading %s: %.1f M records, %d%%, %.1f M records/s%s",
             name, (double)p->records / 1e6, share, (double)p->records / 1e6 / s, left);
    show(buf, now);
}

/* The file name of path, escaped, cut at 60 bytes as the line shows it. */
static void set_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *name = ana_text_escape(base, strlen(base));
    snprintf(line.name, sizeof(line.name), "%.60s", name);
    free(name);
}

static void on_progress(void *ctx, const ana_import_progress *p)
{
    (void)ctx;
    uint64_t now = now_ns();
    if (p->done) {
        wipe();
        return;
    }
    if (p->records == 0) {
        line.start_ns = now;
        line.drawn_ns = 0;
        line.first_ns = line.first_ns ? line.first_ns : now;
        set_name(p->path);
        return;
    }
    if (now - line.start_ns < SHOW_AFTER_NS || now - line.drawn_ns < REDRAW_NS)
        return;
    draw(p, now);
}

/* A stage begins (what NULL: the stages are over): drawn at once when the command has
 * been at work for half a second, with the seconds since its first load began. */
static void on_stage(void *ctx, const char *path, const char *what, int i, int n)
{
    (void)ctx;
    uint64_t now = now_ns();
    if (!what) {
        wipe();
        return;
    }
    line.first_ns = line.first_ns ? line.first_ns : now;
    if (now - line.first_ns < SHOW_AFTER_NS)
        return;
    set_name(path);
    char buf[512], of[32] = "";
    if (n > 0)
        snprintf(of, sizeof(of), " (%d of %d)", i, n);
    double s = (double)(now - line.first_ns) / 1e9;
    snprintf(buf, sizeof(buf), "anatomist: %s: %s%s, %.*f s in", line.name, what, of,
             s < 10 ? 1 : 0, s);
    show(buf, now);
}

void ana_cli_progress_init(void)
{
    if (isatty(STDERR_FILENO)) {
        ana_import_set_progress(on_progress, NULL);
        ana_stage_set(on_stage, NULL);
    }
}
