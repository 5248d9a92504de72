/* The --fail-on grammar of `anatomist diff` (diff.h, docs/diff.md): what each form of a
 * threshold compares, the limit in the metric's unit, and the refusals. */
#include <criterion/criterion.h>
#include <string.h>

#include "analyses/diff.h"

static ana_diff_limit lim[ANA_DIFF_MAX_LIMITS];
static char err[256];

static size_t parse_ok(const char *spec)
{
    size_t n = 99;
    int rc = ana_diff_limits_parse(spec, lim, ANA_DIFF_MAX_LIMITS, &n, err, sizeof(err));
    cr_assert_eq(rc, 0, "%s: %s", spec, err);
    return n;
}

static void parse_bad(const char *spec, const char *says)
{
    size_t n;
    err[0] = 0;
    cr_assert_eq(ana_diff_limits_parse(spec, lim, ANA_DIFF_MAX_LIMITS, &n, err, sizeof(err)), -1,
                 "%s was accepted", spec);
    cr_expect(strstr(err, says) != NULL, "%s: '%s' does not say '%s'", spec, err, says);
}

Test(diff_fail_on, forms)
{
    cr_assert_eq(parse_ok("peak-memory>+5%, step-time >= -3.5 %,memory:weights<=+100MiB"), 3);
    cr_expect_str_eq(lim[0].key, "peak-memory");
    cr_expect_str_eq(lim[0].op, ">");
    cr_expect_eq(lim[0].cmp, ANA_DIFF_RATIO);
    cr_expect_float_eq(lim[0].limit, 0.05, 1e-12);
    cr_expect_str_eq(lim[0].spec, "peak-memory>+5%");
    cr_expect_str_eq(lim[1].key, "step-time");
    cr_expect_str_eq(lim[1].op, ">=");
    cr_expect_float_eq(lim[1].limit, -0.035, 1e-12);
    cr_expect_str_eq(lim[1].spec, "step-time >= -3.5 %");
    cr_expect_str_eq(lim[2].key, "memory:weights");
    cr_expect_str_eq(lim[2].op, "<=");
    cr_expect_eq(lim[2].cmp, ANA_DIFF_DELTA);
    cr_expect_float_eq(lim[2].limit, 104857600.0, 0.5);
}

Test(diff_fail_on, units_follow_the_metric)
{
    cr_assert_eq(parse_ok("gpu-busy>+2ms,time:contraction<-1.5us,peak-memory>70GiB,"
                          "memory-at-end>+1000,kernel-launches<10,mfu<0.3,gpu-idle>250ns"), 7);
    cr_expect_eq(lim[0].cmp, ANA_DIFF_DELTA);
    cr_expect_float_eq(lim[0].limit, 2e6, 0.5);
    cr_expect_float_eq(lim[1].limit, -1500.0, 0.5);
    cr_expect_eq(lim[2].cmp, ANA_DIFF_HEAD); /* unsigned: head's own value */
    cr_expect_float_eq(lim[2].limit, 70.0 * (1ull << 30), 0.5);
    cr_expect_eq(lim[3].cmp, ANA_DIFF_DELTA);
    cr_expect_float_eq(lim[3].limit, 1000.0, 1e-9);
    cr_expect_eq(lim[4].cmp, ANA_DIFF_HEAD);
    cr_expect_float_eq(lim[4].limit, 10.0, 1e-9);
    cr_expect_float_eq(lim[5].limit, 0.3, 1e-12);
    cr_expect_eq(lim[6].cmp, ANA_DIFF_HEAD);
    cr_expect_float_eq(lim[6].limit, 250.0, 1e-9);
}

Test(diff_fail_on, refusals)
{
    parse_bad("", "empty threshold");
    parse_bad("peak-memory>+5%,", "empty threshold");
    parse_bad("peak-memory>+5%,,step-time>+1%", "empty threshold");
    parse_bad("peak-memory+5%", "no comparison");
    parse_bad(">+5%", "no metric");
    parse_bad("peak-mem>+5%", "unknown metric 'peak-mem'");
    parse_bad("time:gemm>+5%", "unknown metric 'time:gemm'");
    parse_bad("memory:model.weights>+5%", "unknown metric");
    parse_bad("peak-memory>>5%", "'peak-memory>>5%': the value must be a number");
    parse_bad("peak-memory=>5%", "unknown metric 'peak-memory='");
    parse_bad("peak-memory>+5ms", "'ms' is not a unit of peak-memory (in bytes)");
    parse_bad("step-time>+5MiB", "'MiB' is not a unit of step-time (in ns)");
    parse_bad("kernel-launches>+5k", "'k' is not a unit of kernel-launches");
    parse_bad("gpu-busy>inf", "must be a number");
    parse_bad("step-time>+3%,peak-memory>+5%%", "'peak-memory>+5%%'");
}

Test(diff_fail_on, at_most_max)
{
    size_t n;
    cr_expect_eq(ana_diff_limits_parse("gpu-time>+1%,gpu-time>+2%,gpu-time>+3%", lim, 2, &n, err,
                                       sizeof(err)), -1);
    cr_expect(strstr(err, "more than 2 thresholds") != NULL, "%s", err);
}
