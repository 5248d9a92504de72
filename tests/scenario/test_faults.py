"""Faults in the profiler's own world (docs/reliability.md): the output directory missing
or unwritable, a disk that fills in the middle of the run (a real small tmpfs, and an
injected ENOSPC/EIO/EFBIG), a file size limit. Each time the program behaves exactly as
without the profiler (same stdout, same exit status), the user gets one line on stderr,
and the trace, read with its live file, holds a gapless prefix of what the program did and
ends with an END record saying why it stopped."""
import os
import resource
import shutil
import subprocess
import unittest

from common import BUILD, PRELOAD, SIM_LIB, clean_env, dump, of, run, sample, tmpdir

FAULT = os.path.join(BUILD, "tests", "libana_test_write_fault.so")
COUNT = 3000


def program(count=COUNT):
    return [sample("alloc_loop"), "0", str(count), "return"]


def lines(stdout):
    """The program's output without the times it prints."""
    return [" ".join(l.split()[:3]) for l in stdout.splitlines()]


def sizes_of(recs):
    return [r["size"] for r in of(recs, "ALLOC") if r["api"] == 1 and r["ret"] == 0]


class Faults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        plain = run(program(), env=clean_env(LD_LIBRARY_PATH=SIM_LIB))
        assert plain.returncode == 0, plain.stderr
        cls.plain = plain
        cls.want = [4096 + i for i in range(COUNT)]

    def traced(self, trace, preload=PRELOAD, cmd=None, preexec=None, lines_said=1, **env):
        # Small chunks: the trace is written in many, so a fault comes in the middle of the run.
        e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=preload, ANATOMIST_OUTPUT=trace,
                      ANATOMIST_BUFFER_KB="64", ANATOMIST_CHUNK_KB="16")
        e.update(env)
        p = subprocess.run(cmd or program(), env=e, capture_output=True, text=True, timeout=120,
                           preexec_fn=preexec)
        self.assertEqual(p.returncode, self.plain.returncode, p.stderr)
        self.assertEqual(lines(p.stdout), lines(self.plain.stdout))
        said = [l for l in p.stderr.splitlines() if l.startswith("anatomist:")]
        self.assertEqual(len(said), lines_said, p.stderr)
        self.assertEqual(p.stderr, "".join(l + "\n" for l in said), "nothing else on stderr")
        return said[-1]

    def stopped(self, trace, why):
        """The trace ends with END reason 2 naming why; its allocations are a gapless prefix."""
        recs = dump(trace, ended="recovered")
        end = of(recs, "END")
        self.assertEqual(len(end), 1)
        self.assertEqual(end[0]["reason"], 2)
        self.assertIn(why, end[0]["detail"])
        got = sizes_of(recs)
        self.assertGreater(len(got), 0)
        # After the fault profiling stops: later calls are not recorded. When the fault comes
        # depends on when the writer ran (under load, possibly only at exit, with every
        # record already in the ring), so the count is not checked; the order is.
        self.assertLessEqual(len(got), COUNT)
        self.assertEqual(got, self.want[:len(got)], "a prefix: no gap, no duplicate")
        return got

    def test_a_missing_output_directory_is_created(self):
        trace = os.path.join(tmpdir(), "new", "deeper", "t.anat")
        e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace)
        p = run(program(200), env=e)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        self.assertEqual(sizes_of(dump(trace)), self.want[:200])

    def test_an_output_directory_that_cannot_exist(self):
        d = tmpdir()
        open(os.path.join(d, "file"), "w").close()
        said = self.traced(os.path.join(d, "file", "sub", "t.anat"))
        self.assertIn("cannot create the directory of the trace", said)
        self.assertIn("Not a directory", said)

    def test_a_read_only_output_directory(self):
        d = tmpdir()
        out = os.path.join(d, "out")
        os.makedirs(out)
        trace = os.path.join(out, "t.anat")
        # A read-only mount refuses even root. Mounted in a user namespace of its own.
        cmd = ["unshare", "-rm", "sh", "-c",
               'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"', out] + program()
        said = self.traced(trace, cmd=cmd)
        self.assertIn("cannot write the trace " + trace, said)
        self.assertIn("Read-only file system", said)

    def test_the_disk_fills_in_the_middle_of_the_run(self):
        d = tmpdir()
        mnt = os.path.join(d, "small")
        keep = os.path.join(d, "kept")
        os.makedirs(mnt)
        os.makedirs(keep)
        trace = os.path.join(mnt, "t.anat")
        # 2 MiB of tmpfs, 576 KiB of it taken: the live file (4 KiB + 1 MiB + a staging area
        # of 64 + 16 + 256 KiB + 68 KiB for the one recording thread) and about 40 KiB of
        # trace fit, the run's 57 KiB do not (unpacked chunks: packed, the whole run would
        # fit). The files are copied out before the namespace (and its mount) goes away.
        script = ('keep=$1; shift; mount -t tmpfs -o size=2m tmpfs "$0" && '
                  'head -c $((2048*1024 - 1472*1024)) /dev/zero > "$0/filler" && '
                  '"$@"; rc=$?; cp "$0"/t.anat* "$keep"; exit $rc')
        cmd = ["unshare", "-rm", "sh", "-c", script, mnt, keep] + program()
        e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace,
                      ANATOMIST_BUFFER_KB="64", ANATOMIST_CHUNK_KB="16", ANATOMIST_PACK="0")
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        said = [l for l in p.stderr.splitlines() if l.startswith("anatomist:")]
        self.assertEqual(len(said), 1, p.stderr)
        self.assertIn("No space left on device", said[0])
        self.assertIn("kept in " + trace + ".live", said[0])
        self.stopped(os.path.join(keep, "t.anat"), "No space left on device")

    def injected(self, err, text):
        trace = os.path.join(tmpdir(), "t.anat")
        said = self.traced(trace, preload=FAULT + ":" + PRELOAD, ANA_TEST_FAULT_AFTER="20000",
                           ANA_TEST_FAULT_ERRNO=err)
        self.assertIn(text, said)
        self.assertIn("profiling stopped, the program goes on", said)
        got = self.stopped(trace, text)
        # What was written stays whole: the trace alone (no live file) reads to a clean end.
        os.rename(trace + ".live", trace + ".gone")
        self.assertEqual(sizes_of(dump(trace, ended="truncated")), got[:len(
            sizes_of(dump(trace, ended="truncated")))])

    def test_injected_disk_full(self):
        self.injected("ENOSPC", "No space left on device")

    def test_injected_io_error(self):
        self.injected("EIO", "Input/output error")

    def test_injected_file_that_cannot_grow(self):
        self.injected("EFBIG", "File too large")

    def test_a_file_size_limit_does_not_kill_the_program(self):
        # RLIMIT_FSIZE makes a write past it raise SIGXFSZ, whose default action kills: the
        # profiler's writes must fail with EFBIG instead, on whichever thread makes them. At
        # 16 KiB the live file cannot be made (first line) and the trace stops (second).
        trace = os.path.join(tmpdir(), "t.anat")
        limit = 16 * 1024
        said = self.traced(trace, lines_said=2, preexec=lambda: resource.setrlimit(
            resource.RLIMIT_FSIZE, (limit, limit)))
        self.assertIn("File too large", said)
        self.assertLessEqual(os.path.getsize(trace), limit)
        # Without a live file the END goes into the trace itself: it is small enough to fit.
        recs = dump(trace, ended="exit")
        self.assertEqual([(e["reason"], e["detail"]) for e in of(recs, "END")],
                         [(2, "cannot write the trace: File too large")])
        got = sizes_of(recs)
        self.assertEqual(got, self.want[:len(got)])


if __name__ == "__main__":
    unittest.main()
