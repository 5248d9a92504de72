/* naming.h — output file names: expansion of ANATOMIST_OUTPUT patterns.
 *
 * Shared by the preload (which names its trace) and `anatomist run` (which tells the user
 * where the trace went). Pure functions, no allocation. */
#ifndef ANA_NAMING_H
#define ANA_NAMING_H

#include <stddef.h>

#define ANA_DEFAULT_OUTPUT "anatomist-%p.anat"

/* Expands %h (host name), %p (pid), %r (rank, "norank" when unknown: rank < 0) and %% in
 * pattern. When the pattern has no %p and the process is not the root process of the run
 * (is_root == 0: a forked child, a second rank), "-PID" is inserted before the last
 * extension so that processes never overwrite each other's traces. Returns 0, or -1 when
 * the result does not fit in cap. */
int ana_output_expand(const char *pattern, const char *host, long pid, long rank, int is_root,
                      char *out, size_t cap);

/* Inserts text before the last extension of path's last component ("a/t.anat" + "-7" ->
 * "a/t-7.anat"; a name without one, or whose only dot leads it, gets text at its end).
 * Returns 0, or -1 (path unchanged) when the result does not fit in cap. */
int ana_name_insert(char *path, size_t cap, const char *text);

/* The rank of this process from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID (first
 * set wins), or -1. local_rank and world_size likewise (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
 * SLURM_LOCALID; WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS). */
long ana_env_rank(void);
long ana_env_local_rank(void);
long ana_env_world_size(void);

#endif
