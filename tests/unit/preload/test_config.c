#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "config.h"

/* A fake environment for ana_config_load. */
static const char *env_names[8], *env_values[8];
static int env_n;
static const char *fake_get(const char *name)
{
    for (int i = 0; i < env_n; i++)
        if (!strcmp(env_names[i], name))
            return env_values[i];
    return NULL;
}
static void set(const char *n, const char *v) { env_names[env_n] = n; env_values[env_n++] = v; }

static int warned;
static char last_warning[512];
static void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_warning, sizeof(last_warning), fmt, ap);
    va_end(ap);
    warned++;
}

Test(config, defaults)
{
    env_n = 0;
    ana_config c;
    cr_assert_eq(ana_config_load(&c, fake_get, warn), 0);
    cr_expect_str_eq(c.output, "anatomist-%p.anat");
    cr_expect_eq(c.stacks, 1);
    cr_expect_eq(c.stack_depth, 64);
    cr_expect_eq(c.flush_ms, 200);
    cr_expect_eq(c.buffer_kb, 1024);
    cr_expect_eq(c.disable, 0);
    cr_expect_eq(c.root_pid, 0);
}

Test(config, values_and_bad_values)
{
    env_n = 0;
    warned = 0;
    set("ANATOMIST_STACKS", "off");
    set("ANATOMIST_STACK_DEPTH", "300"); /* above 256 */
    set("ANATOMIST_FLUSH_MS", "50");
    set("ANATOMIST_OUTPUT", "/tmp/x-%r.anat");
    set("ANATOMIST_BUFFER_KB", "12k");
    set("ANATOMIST_ROOT_PID", "123456");
    ana_config c;
    cr_assert_eq(ana_config_load(&c, fake_get, warn), 2);
    cr_expect_eq(warned, 2);
    cr_expect_eq(c.stacks, 0);
    cr_expect_eq(c.stack_depth, 64, "out of range falls back to the default");
    cr_expect_eq(c.flush_ms, 50);
    cr_expect_eq(c.buffer_kb, 1024);
    cr_expect_eq(c.root_pid, 123456);
    cr_expect_str_eq(c.output, "/tmp/x-%r.anat");
    cr_expect(strstr(last_warning, "ANATOMIST_BUFFER_KB=12k") != NULL, "%s", last_warning);
}

/* Every variable of the table is documented in docs/configuration.md with the same
 * default, and the document lists no ANATOMIST_ variable of the preload the table lacks. */
Test(config, table_matches_documentation)
{
    FILE *f = fopen(ANA_SOURCE_DIR "/docs/configuration.md", "r");
    cr_assert_not_null(f);
    char line[4096];
    int documented = 0, in_preload_table = 1;
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "## ", 3))
            in_preload_table = 0; /* later sections document other components */
        if (!in_preload_table || strncmp(line, "| `ANATOMIST_", 13) != 0)
            continue;
        char name[128], def[256];
        cr_assert_eq(sscanf(line, "| `%127[^`]` | `%255[^`]` |", name, def), 2, "row: %s", line);
        const ana_config_var *v = ana_config_vars();
        while (v->name && strcmp(v->name, name))
            v++;
        cr_assert_not_null(v->name, "%s is documented but not in the table", name);
        cr_expect_str_eq(def, v->def, "default of %s", name);
        documented++;
    }
    fclose(f);
    int n = 0;
    for (const ana_config_var *v = ana_config_vars(); v->name; v++)
        n++;
    cr_expect_eq(documented, n, "%d variables documented, %d in the table", documented, n);
}

/* A relative output name is taken against the working directory when the preload loads. */
Test(config, relative_output_is_made_absolute)
{
    char old[1024];
    cr_assert_not_null(getcwd(old, sizeof(old)));
    ana_config c;
    env_n = 0;
    set("ANATOMIST_OUTPUT", "runs/t-%p.anat");
    ana_config_load(&c, fake_get, NULL);
    cr_assert_eq(chdir("/tmp"), 0);
    cr_expect_eq(ana_config_absolute_output(&c), 0);
    cr_expect_str_eq(c.output, "/tmp/runs/t-%p.anat");
    cr_expect_eq(ana_config_absolute_output(&c), 0); /* absolute: unchanged */
    cr_expect_str_eq(c.output, "/tmp/runs/t-%p.anat");
    snprintf(c.output, sizeof(c.output), "x.anat");
    cr_assert_eq(chdir("/"), 0);
    cr_expect_eq(ana_config_absolute_output(&c), 0);
    cr_expect_str_eq(c.output, "/x.anat");
    /* too long with the directory in front: left as it was */
    cr_assert_eq(chdir("/tmp"), 0);
    memset(c.output, 'a', sizeof(c.output) - 3);
    c.output[sizeof(c.output) - 3] = 0;
    cr_expect_eq(ana_config_absolute_output(&c), -1);
    cr_expect_eq(strlen(c.output), sizeof(c.output) - 3);
    cr_assert_eq(chdir(old), 0);
}
