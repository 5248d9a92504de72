/* progress.c — the progress line of a long trace load, on standard error when it is a
 * terminal: "anatomist: reading NAME: 12.3 M records, 45%, 8.1 M records/s, 3 s left",
 * redrawn in place at most 5 times a second, shown only once a load has taken half a
 * second (short work stays silent), and wiped when the load ends so that what follows
 * starts on a clean line. On a pipe or a file nothing is written: outputs and messages
 * stay byte-exact. Part of cli/: installed by main.c (ana_cli_progress_init); calls
 * import/ (ana_import_set_progress) and model/ (ana_text_escape for the name). */
#define _GNU_SOURCE
#include "cli/cli.h"
#include "import/import.h"
#include "model/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SHOW_AFTER_NS = 500000000, REDRAW_NS = 200000000 };

static struct {
    uint64_t start_ns, drawn_ns;
    size_t width; /* columns of the line on screen, 0 when none is */
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

static void draw(const ana_import_progress *p, uint64_t now)
{
    double s = (double)(now - line.start_ns) / 1e9;
    const char *base = strrchr(p->path, '/');
    base = base ? base + 1 : p->path;
    char *name = ana_text_escape(base, strlen(base));
    char left[32] = "";
    if (p->bytes_total && p->bytes_read && p->bytes_read <= p->bytes_total) {
        double rest = s * (double)(p->bytes_total - p->bytes_read) / (double)p->bytes_read;
        snprintf(left, sizeof(left), rest < 10 ? ", %.1f s left" : ", %.0f s left", rest);
    }
    char buf[512];
    int share = p->bytes_total ? (int)(100.0 * (double)p->bytes_read / (double)p->bytes_total) : 0;
    int n = snprintf(buf, sizeof(buf),
                     "anatomist: reading %.60s: %.1f M records, %d%%, %.1f M records/s%s", name,
                     (double)p->records / 1e6, share, (double)p->records / 1e6 / s, left);
    free(name);
    size_t w = n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
    /* Pad over a longer line drawn before. */
    fprintf(stderr, "\r%s%*s", buf, line.width > w ? (int)(line.width - w) : 0, "");
    fflush(stderr);
    line.width = w > line.width ? w : line.width;
    line.drawn_ns = now;
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
        return;
    }
    if (now - line.start_ns < SHOW_AFTER_NS || now - line.drawn_ns < REDRAW_NS)
        return;
    draw(p, now);
}

void ana_cli_progress_init(void)
{
    if (isatty(STDERR_FILENO))
        ana_import_set_progress(on_progress, NULL);
}
