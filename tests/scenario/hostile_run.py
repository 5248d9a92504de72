"""Traces of the hostile probe (hostile/): a program whose every string in its trace is
markup that runs script if a report ever writes it as HTML — kernel names, function
names, NVTX ranges, marks and domains, its thread's names, argv, the executable's path and
a library's path. Shared by test_security.py and tests/browser/test_hostile_strings.py.

make(root) copies the probe and its library under root into directories named after the
strings (the executable itself is named ANA_HOSTILE_3), and traces two runs on the sim:
base (kernel 1 twice, kernel 2 once) and head (--extra: kernel 1 three times, 2 once, 3
once, and 3 MiB more from a function without a symbol). The strings are hostile.h's."""
import os
import shutil

from common import BUILD, anatomist, clean_env, ledger

H1 = "<script>alert(1)</script>"
H2 = "</script><img src=x onerror=alert(2)>"
H3 = "\"'><svg onload=alert(3)>"
H3_SYM = H3[1:]  # the assembler cannot put '"' in a symbol name (hostile.h)
THREAD = "<b id=x1>t</b>"
HOSTILE = (H1, H2, H3)

PROBE = os.path.join(BUILD, "tests", "scenario_hostile_probe")
LIB = os.path.join(BUILD, "tests", "libana_hostile.so")


class Run:
    """Paths of one make(): dir, exe, lib, base and head traces, and each run's ledger."""


def make(root):
    r = Run()
    r.dir = os.path.join(root, H1, H2)   # H1 and H2 hold '/': several directories
    os.makedirs(r.dir)
    r.exe = os.path.join(r.dir, H3)
    r.lib = os.path.join(r.dir, "lib" + H3 + ".so")
    shutil.copy2(PROBE, r.exe)
    shutil.copy2(LIB, r.lib)
    r.ledgers = {}
    for name, extra in (("base", []), ("head", ["--extra"])):
        path = os.path.join(r.dir, name + ".anat")
        p = anatomist("run", "--sim", "-q", "-o", path, "--", r.exe, r.lib, *extra, *HOSTILE,
                      env=clean_env())
        assert p.returncode == 0, "%s: exit %d\n%s%s" % (name, p.returncode, p.stdout, p.stderr)
        led = ledger(p.stdout)
        assert [k[0] for k in led["kernels"]] == list(HOSTILE), led  # hostile.h == these
        r.ledgers[name] = led
        setattr(r, name, path)
    return r


def kernel_launches(led):
    """{kernel name: launches} of a ledger, without those never launched."""
    return {name: n for name, n in led["kernels"] if n}

