/* nvtx.h — the preload as an NVTX injection library (nvtx.c).
 *
 * A program's header-only NVTX (v3) loads the library named by NVTX_INJECTION64_PATH at
 * its first NVTX call and calls its InitializeInjectionNvtx2 (and, for extensions such as
 * nvToolsExtMem.h, InitializeInjectionNvtxExtension); the preload exports both and fills
 * NVTX's function slots with its own entry points, which write RANGE and LABEL records
 * (docs/trace-format.md, "NVTX"). Being preloaded already, the dlopen of its own path
 * returns the same library.
 *
 * The entry points run on the program's threads, on the hot path: no lock, no malloc; they
 * keep NVTX's results (push/pop levels, range ids, handles) whether or not the session
 * records, and start the session as a CUDA call does. Domains, registered strings, heaps
 * and memory regions live in fixed tables; handles point into them and stay valid for the
 * life of the process. */
#ifndef ANA_NVTX_H
#define ANA_NVTX_H

/* Constructor (after the configuration is loaded, unless the preload is disabled): points
 * NVTX_INJECTION64_PATH at the preload when it is unset, or notes which library has it. */
void ana_nvtx_setup(void);
/* On the thread that started the session, inside its bracket: writes INFO "nvtx" and a
 * LABEL for each domain created before the session (a forked child's parent's domains). */
void ana_nvtx_session_started(void);
/* After fork in the child: its trace gets INFO "nvtx" again. */
void ana_nvtx_atfork_child(void);

#endif
