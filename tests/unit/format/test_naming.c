#include <criterion/criterion.h>
#include <stdlib.h>
#include "naming.h"

Test(naming, expands_escapes)
{
    char out[256];
    cr_assert_eq(ana_output_expand("run-%h-%p-r%r.anat", "gpu7", 4242, 3, 1, out, sizeof(out)), 0);
    cr_expect_str_eq(out, "run-gpu7-4242-r3.anat");
    cr_assert_eq(ana_output_expand("x-%r-100%%-%q", "h", 1, -1, 1, out, sizeof(out)), 0);
    cr_expect_str_eq(out, "x-norank-100%-%q");
}

Test(naming, non_root_processes_get_their_pid_inserted)
{
    char out[256];
    cr_assert_eq(ana_output_expand("out/mlp.anat", "h", 77, -1, 1, out, sizeof(out)), 0);
    cr_expect_str_eq(out, "out/mlp.anat");
    cr_assert_eq(ana_output_expand("out/mlp.anat", "h", 77, -1, 0, out, sizeof(out)), 0);
    cr_expect_str_eq(out, "out/mlp-77.anat");
    cr_assert_eq(ana_output_expand("dir.d/trace", "h", 77, -1, 0, out, sizeof(out)), 0);
    cr_expect_str_eq(out, "dir.d/trace-77");
    cr_assert_eq(ana_output_expand(".hidden", "h", 5, -1, 0, out, sizeof(out)), 0);
    cr_expect_str_eq(out, ".hidden-5");
    /* With %p nothing is inserted. */
    cr_assert_eq(ana_output_expand("t-%p.anat", "h", 77, -1, 0, out, sizeof(out)), 0);
    cr_expect_str_eq(out, "t-77.anat");
}

Test(naming, refuses_overflow)
{
    char out[8];
    cr_expect_eq(ana_output_expand("abcdefgh", "h", 1, -1, 1, out, sizeof(out)), -1);
    cr_expect_eq(ana_output_expand("a.b", "h", 123456, -1, 0, out, sizeof(out)), -1);
}

Test(naming, rank_from_environment)
{
    unsetenv("RANK"); unsetenv("OMPI_COMM_WORLD_RANK"); unsetenv("PMI_RANK"); unsetenv("SLURM_PROCID");
    cr_expect_eq(ana_env_rank(), -1);
    setenv("SLURM_PROCID", "5", 1);
    cr_expect_eq(ana_env_rank(), 5);
    setenv("RANK", "2", 1);
    cr_expect_eq(ana_env_rank(), 2, "RANK wins over SLURM_PROCID");
    setenv("RANK", "x", 1);
    cr_expect_eq(ana_env_rank(), 5, "a non-number is ignored");
}
