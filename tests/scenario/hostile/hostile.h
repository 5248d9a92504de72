/* hostile.h — the strings the hostile probe (hostile_probe.c, hostile_lib.c) puts into
 * its trace wherever a traced program controls a string: markup that runs script if a
 * report ever writes it as HTML. tests/scenario/test_security.py and
 * tests/browser/test_hostile_strings.py hold the same strings. */
#ifndef ANA_HOSTILE_H
#define ANA_HOSTILE_H

#define ANA_HOSTILE_1 "<script>alert(1)</script>"
#define ANA_HOSTILE_2 "</script><img src=x onerror=alert(2)>"
#define ANA_HOSTILE_3 "\"'><svg onload=alert(3)>"
/* The assembler cannot put a double quote in a symbol name: function 3 is named without
 * its leading quote. */
#define ANA_HOSTILE_3_SYM "'><svg onload=alert(3)>"
/* A thread's kernel name (comm) holds 15 bytes. */
#define ANA_HOSTILE_THREAD "<b id=x1>t</b>"

#endif
