/* codec_int.h — the record layout table shared by the codec (codec.c) and the packed
 * chunk coding (pack.c). Not part of the format library's interface. */
#ifndef ANA_CODEC_INT_H
#define ANA_CODEC_INT_H

#include <stdint.h>

#include "records.h"

enum ana_ftype { F_U, F_S, F_STR, F_BLOB, F_STRV, F_FRAMES, F_END };

/* What a field holds, for the packed chunks (docs/trace-format.md, "Packed chunks"): a
 * correlation id, a library call id, a duration. */
enum ana_frole { R_NONE, R_CORR, R_CALL, R_DUR };

struct ana_field {
    uint8_t type; /* enum ana_ftype */
    uint16_t off; /* offset in the kind's ana_rec_* struct */
    uint8_t role; /* enum ana_frole */
};

/* Each known kind's fields in their order on disk, ended by F_END (after `dt`, which every
 * kind but SEGMENT starts with). */
extern const struct ana_field *const ana_fields[ANA_K_COUNT];

#endif
