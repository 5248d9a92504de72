/* tty.c — what the analyzer prints to a terminal never drives the terminal (cli.h).
 *
 * Kernel names, NVTX names, paths and arguments come from the traced program, and may hold
 * escape sequences that retitle, recolour or (with some terminals) write into the user's
 * terminal. When standard output is a terminal, it goes through a filter that shows C0
 * control bytes other than tab and newline, DEL, and the C1 controls (U+0080..U+009F, as
 * UTF-8) as \xNN. Text outputs escape the trace's strings themselves, whatever stdout is
 * (util.h ana_text_names); this filter stays as a second guard for what a terminal shows.
 * Pipes and files get the bytes as they are: JSON is escaped by its writer, and outputs
 * meant for other programs stay byte-exact.
 * Part of cli/: called by main.c; calls nothing of the analyzer. */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int held_c2; /* a 0xC2 lead byte waiting for the byte after it */

static int put_all(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static ssize_t filter_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    char out[4096 + 16];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (held_c2) {
            held_c2 = 0;
            if (c >= 0x80 && c <= 0x9f) {
                o += (size_t)snprintf(out + o, 16, "\\xc2\\x%02x", c);
                goto next;
            }
            out[o++] = (char)0xc2;
        }
        if (c == 0xc2)
            held_c2 = 1;
        else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
            o += (size_t)snprintf(out + o, 16, "\\x%02x", c);
        else
            out[o++] = (char)c;
    next:
        if (o >= 4096) {
            if (put_all(out, o) < 0)
                return -1;
            o = 0;
        }
    }
    return o && put_all(out, o) < 0 ? -1 : (ssize_t)n;
}

static int filter_close(void *cookie)
{
    (void)cookie;
    if (held_c2) {
        held_c2 = 0;
        return put_all("\xc2", 1);
    }
    return 0;
}

void ana_cli_tty_guard(void)
{
    if (!isatty(STDOUT_FILENO))
        return;
    cookie_io_functions_t io = { .write = filter_write, .close = filter_close };
    FILE *f = fopencookie(NULL, "w", io);
    if (!f)
        return;
    setvbuf(f, NULL, _IOLBF, 0);
    stdout = f;
}
