/* nvtx_int.h — shared by nvtx.c (core NVTX: ranges, marks, names, injection),
 * nvtx_mem.c (the memory extension, nvToolsExtMem.h) and nvtx_text.c (texts, labels). The only preload files that see
 * NVTX's types; NVTX_NO_IMPL keeps NVTX's own implementation out of the preload. All of
 * it may run on the hot path of the program's threads: no lock, no malloc. */
#ifndef ANA_NVTX_INT_H
#define ANA_NVTX_INT_H

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <wchar.h>

#include "nvtx.h"
#include "preload.h"

#define ANA_NVTX_TEXT 480u /* most bytes of a name in a record */

/* A message as UTF-8: s points at the program's text, at buf, or at a registered string. */
typedef struct ana_nvtx_text {
    const char *s;
    uint32_t len;
    char buf[ANA_NVTX_TEXT + 4];
} ana_nvtx_text;

/* Fill t from an ASCII/UTF-8 string (NULL: empty), a wide string, or an NVTX message of
 * `type` (nvtxMessageType_t; a registered handle that is not the preload's reads as
 * empty). At most ANA_NVTX_TEXT bytes, never splitting a character. */
void ana_nvtx_text_ascii(ana_nvtx_text *t, const char *s);
void ana_nvtx_text_wide(ana_nvtx_text *t, const wchar_t *w);
void ana_nvtx_text_of(ana_nvtx_text *t, int32_t type, nvtxMessageValue_t v);
/* A registered string: a copy of t in the preload's arena (its handle); the arena's ""
 * when it is full. */
nvtxStringHandle_t ana_nvtx_string_register(const ana_nvtx_text *t);

/* Opens the bracket of a recorded NVTX call (ana_enter; starts the session); 0 when
 * nothing is to be recorded. ana_leave(c) ends it. */
int ana_nvtx_rec_begin(ana_call *c);
/* Inside the bracket: appends a LABEL (t NULL: empty name), time = the call's start. */
void ana_nvtx_rec_label(ana_call *c, uint64_t what, uint64_t domain, uint64_t id, uint64_t size,
                        const ana_nvtx_text *t);
/* Bracket and LABEL in one. */
void ana_nvtx_put_label(uint64_t what, uint64_t domain, uint64_t id, uint64_t size,
                        const ana_nvtx_text *t);

/* A domain handle as records hold it (0: the default domain). */
static inline uint64_t ana_nvtx_dom_id(nvtxDomainHandle_t h) { return (uint64_t)(uintptr_t)h; }

/* nvtx_mem.c: fills the memory extension's function slots (segment 1 of module
 * NVTX_EXT_MODULEID_MEM, n slots indexed by NVTX3EXT_CBID_*). */
void ana_nvtx_mem_fill(intptr_t *slots, size_t n);

#endif
