/* kineto.c — placeholder until the importer lands: refuses every file. */
#include "kineto.h"

#include <stdio.h>
#include <string.h>

int ana_kineto_load(const char *path, unsigned flags, ana_trace **out, ana_error *err)
{
    (void)flags;
    *out = NULL;
    memset(err, 0, sizeof(*err));
    snprintf(err->path, sizeof(err->path), "%s", path);
    snprintf(err->msg, sizeof(err->msg), "JSON traces are not supported yet");
    return -1;
}
