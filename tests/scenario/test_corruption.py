"""Broken input to the analyzer: real traces recorded on the simulated device (train_mlp,
train_gpt, a run killed by SIGKILL when memory ran out) and a small PyTorch profiler
(Kineto) JSON, plain and gzip, cut at many offsets and damaged by flipped and overwritten
bytes (a seeded PRNG, thousands of variants). Every `anatomist report --json` (and `info
--json` on some) exits 0 or 2, with "anatomist: FILE: offset N ..." on 2, never by a
signal, within 1 GiB of address space. A trace cut at a chunk boundary loads with every
record of the chunks before the cut, counted independently of the reader: the chunks are
decompressed by tests/fuzz/anat_unpack and their records walked here."""
import gzip
import json
import multiprocessing
import os
import random
import re
import resource
import struct
import subprocess
import sys
import unittest

from common import ANATOMIST, BUILD, DUMP, SANITIZER_RUNTIME, anatomist, clean_env, run, sample, tmpdir

UNPACK = os.path.join(BUILD, "tests", "anat_unpack")
HEADER, CHUNK_HEADER = 32, 16
SEGMENT = 1
MEMORY_LIMIT = 1 << 30  # RLIMIT_AS of each analyzer run (not under AddressSanitizer)
SEED = 20261122
JOBS = 2  # worker processes (single-threaded: preexec_fn is not safe beside threads)

# A small Kineto trace in the current schema: an op with shapes, a launch and its kernel,
# a copy, a set, a collective, a ProfilerStep range, [memory] events.
KINETO = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 1000000,
                          "computeMajor": 9, "computeMinor": 0, "numSms": 10}],
    "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7,
         "ts": 1000.5, "dur": 300.25, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1010,
         "dur": 20, "args": {"External id": 2, "Input Dims": [[64, 32], [32, 16]],
                             "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7,
         "ts": 1012, "dur": 5, "args": {"External id": 2, "correlation": 11}},
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7,
         "ts": 1020.001, "dur": 3.333,
         "args": {"External id": 2, "device": 0, "stream": 7, "correlation": 11}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 7, "tid": 7,
         "ts": 1040, "dur": 5, "args": {"correlation": 12}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0,
         "tid": 7, "ts": 1050, "dur": 2,
         "args": {"device": 0, "stream": 7, "correlation": 12, "bytes": 4096}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
         "ts": 1060, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 13, "bytes": 64}},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 7,
         "ts": 1100, "dur": 20, "args": {"External id": 3, "Collective name": "allreduce",
                                         "In msg nelems": 1024, "Out msg nelems": 1024,
                                         "dtype": "Float", "Group size": 2,
                                         "Process Group Name": "0"}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
         "pid": 0, "tid": "stream 8", "ts": 1110, "dur": 30,
         "args": {"External id": 3, "device": 0, "stream": 8, "correlation": 14}},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 1011,
         "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": 1000,
                  "Total Allocated": 6000}},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 1012,
         "args": {"Device Type": 1, "Device Id": 0, "Addr": 8192, "Bytes": -2000,
                  "Total Allocated": 4000}},
    ],
}


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def record(name, *args, sim_memory=None, code=0):
    out = os.path.join(tmpdir(), name + ".anat")
    opts = ["run", "--sim", "-q", "-o", out] + (["--sim-memory", sim_memory] if sim_memory else [])
    r = anatomist(*opts, "--", *args, timeout=300)
    assert r.returncode == code, (name, r.returncode, r.stderr)
    with open(out, "rb") as f:
        return f.read()


def chunks(data):
    """[(offset, end)] of each complete chunk, from the chunk headers."""
    out, pos = [], HEADER
    while pos + CHUNK_HEADER <= len(data) and data[pos:pos + 4] in (b"ACHK", b"ACHP"):
        csize = struct.unpack_from("<I", data, pos + 4)[0]
        if pos + CHUNK_HEADER + csize > len(data):
            break
        out.append((pos, pos + CHUNK_HEADER + csize))
        pos += CHUNK_HEADER + csize
    return out


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        v |= (c & 0x7F) << shift
        i += 1
        if c < 0x80:
            return v, i
        shift += 7


def records_per_chunk(path, data):
    """Records of each chunk, SEGMENTs not counted (the dump folds them into "tid"):
    anat_unpack decompresses the chunks, the records are walked here by their headers."""
    out_path = path + ".payload"
    r = run([UNPACK, path, out_path])
    assert r.returncode == 0, r.stderr
    with open(out_path, "rb") as f:
        payload = f.read()
    counts, at = [], 0
    for n, (off, _) in enumerate(chunks(data)):
        at += 4 if n else 0  # the "ACHK" anat_unpack puts between chunks
        rsize = struct.unpack_from("<I", data, off + 8)[0]
        i, end, count = at, at + rsize, 0
        while i < end:
            kind, i = varint(payload, i)
            length, i = varint(payload, i)
            i += length
            count += kind != SEGMENT
        assert i == end, "records run past their chunk"
        counts.append(count)
        at = end
    assert at == len(payload)
    return counts


def trace_variants(rnd, data, n):
    """n damaged copies of a .anat file: cuts (at and around chunk boundaries, in the
    header, anywhere), flipped bits, overwritten bytes and chunk-header fields."""
    cuts = [c for off, end in chunks(data) for c in (off, off + 1, off + 15, off + 16, off + 17, end - 1)]
    cuts += list(range(0, 40))
    out = [("cut", data[:c]) for c in cuts]
    heads = [off for off, _ in chunks(data)]
    while len(out) < n:
        b, how = bytearray(data), rnd.randrange(6)
        if how == 0:
            out.append(("cut", data[:rnd.randrange(len(data))]))
            continue
        if how == 1:
            p = rnd.randrange(len(b))
            b[p] ^= 1 << rnd.randrange(8)
        elif how == 2:
            for _ in range(rnd.randint(2, 8)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        elif how == 3:
            p = rnd.randrange(len(b))
            b[p:p + 8] = bytes(rnd.randrange(256) for _ in range(8))[:len(b) - p]
        else:  # a chunk header's csize, rsize or seq, or the file header's fields
            p = rnd.choice(heads + [0]) + rnd.choice((4, 8, 12))
            b[p:p + 4] = struct.pack("<I", rnd.choice((0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 64 << 20,
                                                        rnd.randrange(1 << 32))))
        out.append(("damage", bytes(b)))
    return out[:max(n, len(cuts))]


def json_variants(rnd, data, n):
    out = []
    while len(out) < n:
        how = rnd.randrange(3)
        if how == 0:
            out.append(("cut", data[:rnd.randrange(len(data) + 1)]))
            continue
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            p = rnd.randrange(len(b))
            b[p] = rnd.choice(b'{}[]":,\\0123456789-.eE \x00\xff') if how == 1 else rnd.randrange(256)
        out.append(("damage", bytes(b)))
    return out


def check_variant(job):
    """Runs the analyzer on one variant; returns (exit code, problem or None)."""
    path, data, cmds = job
    with open(path, "wb") as f:
        f.write(data)
    for cmd in cmds:
        p = subprocess.run([ANATOMIST, *cmd, path], env=clean_env(), capture_output=True,
                           timeout=60, preexec_fn=None if SANITIZER_RUNTIME else limit_memory)
        err = p.stderr.decode(errors="replace")
        if p.returncode < 0:
            return p.returncode, f"{cmd} killed by signal {-p.returncode}: {err[-500:]}"
        if p.returncode not in (0, 2):
            return p.returncode, f"{cmd} exit {p.returncode}: {err[-500:]}"
        if p.returncode == 2:
            if not re.search(r"^anatomist: " + re.escape(path) + r": offset \d+", err, re.M):
                return 2, f"{cmd} exit 2 without 'anatomist: FILE: offset N': {err[-500:]}"
            return 2, None
        if cmd[0] == "report":
            json.loads(p.stdout)  # the report of what loaded is a whole document
    os.unlink(path)
    return 0, None


class Corruption(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.traces = {
            "mlp": record("mlp", sample("train_mlp"), "--steps", "2"),
            "gpt": record("gpt", sample("train_gpt"), "--steps", "1"),
            "killed": record("killed", sample("train_mlp"), "--grow-batch", "--kill-on-oom",
                             sim_memory="64MiB", code=128 + 9),
        }
        cls.json = json.dumps(KINETO, indent=1).encode()
        cls.dir = tmpdir()

    def test_damaged_inputs_exit_0_or_2(self):
        rnd = random.Random(SEED)
        jobs = []
        inputs = [(n, ".anat", trace_variants(rnd, d, 700)) for n, d in self.traces.items()]
        inputs.append(("kineto", ".json", json_variants(rnd, self.json, 500)))
        gz = gzip.compress(self.json, mtime=0)
        inputs.append(("kineto", ".json.gz", trace_variants(rnd, gz, 300)))
        for name, ext, variants in inputs:
            for i, (what, data) in enumerate(variants):
                cmds = [["report", "--json", "--no-symbols"]]
                if i % 5 == 0:
                    cmds.append(["info", "--json"])
                jobs.append((os.path.join(self.dir, f"{name}-{what}-{i}{ext}"), data, cmds))
        with multiprocessing.get_context("fork").Pool(JOBS) as pool:
            results = pool.map(check_variant, jobs, chunksize=16)
        problems = [f"{job[0]}: {msg}" for job, (_, msg) in zip(jobs, results) if msg]
        codes = [code for code, _ in results]
        print(f"corruption: {len(jobs)} variants, {codes.count(0)} exit 0, {codes.count(2)} "
              f"exit 2, {len(problems)} problems", file=sys.stderr)
        self.assertEqual(problems[:10], [])
        self.assertGreater(codes.count(0), len(jobs) // 10)  # cuts of whole chunks load
        self.assertGreater(codes.count(2), len(jobs) // 10)  # damage is found

    def test_cut_at_chunk_boundary_keeps_every_record_before_it(self):
        for name in ("gpt", "mlp", "killed"):
            data = self.traces[name]
            path = os.path.join(self.dir, name + ".anat")
            with open(path, "wb") as f:
                f.write(data)
            per_chunk = records_per_chunk(path, data)
            self.assertGreaterEqual(len(per_chunk), 2, name)
            whole = self.dump(path)
            self.assertEqual(len(whole), sum(per_chunk), name)
            for k, (off, _) in enumerate(chunks(data)):
                cut = os.path.join(self.dir, f"{name}-boundary-{k}.anat")
                with open(cut, "wb") as f:
                    f.write(data[:off])
                with self.subTest(trace=name, chunks=k):
                    recs = self.dump(cut, "truncated")
                    self.assertEqual(len(recs), sum(per_chunk[:k]))
                    self.assertEqual(recs, whole[:len(recs)])
                    r = anatomist("report", "--json", "--no-symbols", cut)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(json.loads(r.stdout)["trace"]["ended"], "truncated")

    def dump(self, path, ended=None):
        d = subprocess.run([DUMP, path], capture_output=True, text=True, timeout=60)
        self.assertEqual(d.returncode, 0, d.stderr)
        recs = [json.loads(line) for line in d.stdout.splitlines()]
        self.assertIn("end", recs[-1])
        if ended:
            self.assertEqual(recs[-1]["end"], ended)
        return recs[:-1]


if __name__ == "__main__":
    unittest.main()
