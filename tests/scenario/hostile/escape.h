/* escape.h — the names escape_probe.c puts into its trace: terminal controls (OSC title,
 * CSI colour and clear, BEL, a C1 CSI as UTF-8) and a newline followed by a line shaped
 * like a report's. tests/scenario/test_hostile_names.py holds the same strings. */
#ifndef ANA_ESCAPE_H
#define ANA_ESCAPE_H

#define ANA_ESC_KERNEL_1 "k1\x1b]0;pwned\x07\x1b[31mred\x1b[0m\xc2\x9b" "2J"
#define ANA_ESC_KERNEL_2 "k2\n  FAKE LINE 100.0%\tx\x7f"
#define ANA_ESC_RANGE "r\x1b[2J\nFAKE RANGE"

#endif
