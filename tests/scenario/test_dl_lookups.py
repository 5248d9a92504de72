"""The preload exports dlsym and dlvsym (to hand out wrappers of driver functions); lookups
relative to their caller must still be relative to their caller: dlsym(RTLD_NEXT) and
dlvsym(RTLD_NEXT) from a library find the definition after that library, and
dlsym(RTLD_DEFAULT) from a library loaded RTLD_LOCAL searches that library's own scope.
Handles and dlerror() behave as without the preload."""
import os
import unittest

from common import BUILD, PRELOAD, clean_env, run, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_dl_probe")
LOCAL_C = os.path.join(BUILD, "tests", "dl", "libana_dl_local_c.so")
LIBDIR = os.path.join(BUILD, "tests", "dl")

# What glibc answers (checked against the plain run too): the next definition after
# next_a is next_b's ('b'); local_c's scope holds local_d ('d').
EXPECTED = {"next": "b", "vnext": "b", "default": "d", "handle": "d", "missing": "1"}


def facts(stdout):
    return dict(line.split(" ", 1) for line in stdout.splitlines())


class DlLookups(unittest.TestCase):
    def probe(self, **env):
        r = run([PROBE, LOCAL_C], env=clean_env(LD_LIBRARY_PATH=LIBDIR, **env))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return facts(r.stdout)

    def test_plain_run_is_what_glibc_answers(self):
        self.assertEqual(self.probe(), EXPECTED)

    def test_preloaded_run_answers_the_same(self):
        trace = os.path.join(tmpdir(), "t.anat")
        self.assertEqual(self.probe(LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace), EXPECTED)

    def test_preloaded_without_driver_hooks(self):
        trace = os.path.join(tmpdir(), "t.anat")
        self.assertEqual(self.probe(LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace,
                                    ANATOMIST_DRIVER_HOOKS="0"), EXPECTED)


if __name__ == "__main__":
    unittest.main()
