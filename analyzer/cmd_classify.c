/* cmd_classify.c — placeholder until `anatomist classify` lands. */
#include "cli.h"
#include "util.h"

int ana_cmd_classify(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return ana_cli_usage_error("classify", "classify: not built yet");
}
