/*
 * cubin.c — kernel parameter layouts read from the device code nvcc embeds in a program
 * (sim.h, "cubin.c"; docs/sim.md, "Kernel parameters").
 *
 * The handle __cudaRegisterFatBinary receives points at nvcc's wrapper (int magic
 * 0x466243B1, int version, const void *data, ...); data is a fat binary: a header (u32
 * magic 0xBA55ED50, u16 version, u16 header size, u64 size of what follows) and entries,
 * each `u16 kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload size, ...`
 * followed by its payload. An uncompressed ELF payload is a cubin; its section
 * `.nv.info.<mangled name>` is a list of attributes `u8 format, u8 attribute, u16 value`
 * or, for format 4 (EIFMT_SVAL), `u8 format, u8 attribute, u16 size` and size bytes.
 * EIATTR_KPARAM_INFO (0x17, format 4) describes one parameter: u32 index, u16 ordinal,
 * u16 offset, u32 packed with the size in bytes in bits 18..31.
 *
 * Every read is bounds-checked against the sizes the headers give: a malformed image
 * yields "no layout", never a crash. Pure functions: no locks, no global state; the
 * result is malloc'ed and owned by the caller (kernel.c keeps it as long as the kernel
 * record, i.e. for the process's lifetime).
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRAPPER_MAGIC 0x466243B1u
#define FATBIN_MAGIC 0xBA55ED50u
#define ENTRY_ELF 2
#define EIFMT_SVAL 4
#define EIATTR_KPARAM_INFO 0x17

struct span {
    const uint8_t *p;
    uint64_t n;
};

static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* A sub-span [off, off + len) of s, or an empty span when it does not fit. */
static struct span sub(struct span s, uint64_t off, uint64_t len)
{
    if (off > s.n || len > s.n - off)
        return (struct span){ NULL, 0 };
    return (struct span){ s.p + off, len };
}

/* The ELF64 section of `elf` named `name`, or an empty span. */
static struct span elf_section(struct span elf, const char *name)
{
    static const uint8_t ident[5] = { 0x7f, 'E', 'L', 'F', 2 };
    if (elf.n < 64 || memcmp(elf.p, ident, sizeof(ident)) != 0)
        return (struct span){ NULL, 0 };
    uint64_t shoff = rd64(elf.p + 0x28);
    uint16_t shentsize = rd16(elf.p + 0x3a), shnum = rd16(elf.p + 0x3c), shstrndx = rd16(elf.p + 0x3e);
    if (shentsize < 64 || shstrndx >= shnum)
        return (struct span){ NULL, 0 };
    struct span shdrs = sub(elf, shoff, (uint64_t)shentsize * shnum);
    if (!shdrs.p)
        return (struct span){ NULL, 0 };
    const uint8_t *strh = shdrs.p + (uint64_t)shstrndx * shentsize;
    struct span strtab = sub(elf, rd64(strh + 0x18), rd64(strh + 0x20));
    size_t want = strlen(name) + 1;
    for (uint16_t i = 0; strtab.p && i < shnum; i++) {
        const uint8_t *h = shdrs.p + (uint64_t)i * shentsize;
        struct span n = sub(strtab, rd32(h), want);
        if (n.p && memcmp(n.p, name, want) == 0)
            return sub(elf, rd64(h + 0x18), rd64(h + 0x20));
    }
    return (struct span){ NULL, 0 };
}

/* Calls fn(arg, value) for each KPARAM_INFO value (12+ bytes) of an .nv.info section;
 * -1 when an attribute runs past the section. */
static int each_kparam(struct span info, void (*fn)(void *arg, const uint8_t *v), void *arg)
{
    for (uint64_t at = 0; at + 4 <= info.n;) {
        const uint8_t *a = info.p + at;
        uint64_t len = a[0] == EIFMT_SVAL ? rd16(a + 2) : 0;
        struct span val = sub(info, at + 4, len);
        if (len && !val.p)
            return -1;
        if (a[0] == EIFMT_SVAL && a[1] == EIATTR_KPARAM_INFO && len >= 12)
            fn(arg, val.p);
        at += 4 + len;
    }
    return 0;
}

static void count_param(void *arg, const uint8_t *v)
{
    uint32_t *count = arg, ordinal = rd16(v + 4);
    if (ordinal + 1 > *count)
        *count = ordinal + 1;
}

/* Stores a parameter's offset and size at its ordinal; size 0 marks "not described". */
static void store_param(void *arg, const uint8_t *v)
{
    struct ana_sim_param *p = (struct ana_sim_param *)arg + rd16(v + 4);
    *p = (struct ana_sim_param){ rd16(v + 6), (rd32(v + 8) >> 18) & 0x3fff };
}

/* Fills out from the KPARAM_INFO attributes of an .nv.info section; 0 on success. */
static int read_kparams(struct span info, struct ana_sim_params *out)
{
    uint32_t count = 0;
    if (each_kparam(info, count_param, &count) < 0)
        return -1;
    if (!count)
        return 0;
    struct ana_sim_param *param = calloc(count, sizeof(*param));
    if (!param)
        return -1;
    each_kparam(info, store_param, param);
    for (uint32_t i = 0; i < count; i++) {
        if (!param[i].size) {   /* a gap: not a layout we understand */
            free(param);
            return -1;
        }
    }
    out->param = param;
    out->count = count;
    return 0;
}

/* The layout of `name` from the first ELF entry of one fat binary that describes it. */
static cudaError_t from_fatbin(struct span fb, const char *section, struct ana_sim_params *out)
{
    if (fb.n < 16 || rd32(fb.p) != FATBIN_MAGIC)
        return cudaErrorInvalidKernelImage;
    struct span entries = sub(fb, rd16(fb.p + 6), rd64(fb.p + 8));
    cudaError_t err = cudaErrorNotSupported;  /* no uncompressed cubin describes it */
    for (uint64_t at = 0; entries.p && at + 16 <= entries.n;) {
        const uint8_t *e = entries.p + at;
        uint32_t hsize = rd32(e + 4);
        uint64_t psize = rd64(e + 8);
        struct span payload = sub(entries, at + hsize, psize);
        if (hsize < 16 || !payload.p)
            return cudaErrorInvalidKernelImage;
        if (rd16(e) == ENTRY_ELF) {
            struct span info = elf_section(payload, section);
            if (info.p)
                return read_kparams(info, out) == 0 ? cudaSuccess : cudaErrorInvalidKernelImage;
        }
        at += hsize + psize;
    }
    return err;
}

cudaError_t ana_sim_cubin_params(const void *wrapper, const char *name,
                                 struct ana_sim_params *out)
{
    memset(out, 0, sizeof(*out));
    if (!wrapper || !name || !*name)
        return cudaErrorNotSupported;
    const uint8_t *w = wrapper;
    if (rd32(w) != WRAPPER_MAGIC)
        return cudaErrorInvalidKernelImage;
    const uint8_t *data;
    memcpy(&data, w + 8, sizeof(data));
    if (!data)
        return cudaErrorInvalidKernelImage;
    /* The fat binary's own header gives its size. */
    if (rd32(data) != FATBIN_MAGIC)
        return cudaErrorInvalidKernelImage;
    struct span fb = { data, (uint64_t)rd16(data + 6) + rd64(data + 8) };
    size_t len = strlen(".nv.info.") + strlen(name) + 1;
    char *section = malloc(len);
    if (!section)
        return cudaErrorMemoryAllocation;
    snprintf(section, len, ".nv.info.%s", name);
    cudaError_t err = from_fatbin(fb, section, out);
    free(section);
    return err;
}
