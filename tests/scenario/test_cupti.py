"""GPU activity through CUPTI (docs/trace-format.md, "GPU activity and correlation"): the
samples run under the preload on the simulated device, and their traces are read record
by record with tests/anatrace_dump. The numbers checked come from the samples' ledgers
(what each program knows it did) and from the trace's own API records."""
import collections
import json
import os
import unittest

from common import BUILD, PRELOAD, SANITIZER_RUNTIME, SIM_LIB, clean_env, dump, ledger, of, run, sample, tmpdir

NO_CUPTI = os.path.join(BUILD, "tests", "libana_test_no_cupti.so")
CUPTI_FIRST = os.path.join(BUILD, "tests", "scenario_cupti_first")

API = {"ALLOC", "FREE", "LAUNCH", "MEMCPY", "MEMSET", "VMM"}
GPU = {"GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET", "GPU_MEMORY", "GPU_POOL"}
GRAPH_LAUNCH_APIS = {19, 26, 27}


def profile(program, *args, preload=PRELOAD, **env):
    """Runs program under the preload on the sim; returns (process, records)."""
    trace = os.path.join(tmpdir(), "t.anat")
    e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=preload, ANATOMIST_OUTPUT=trace)
    e.update(env)
    p = run([program, *args], env=e)
    return p, dump(trace)



def cupti_state(recs):
    return [r["value"] for r in recs if r["kind"] == "INFO" and r["key"] == "cupti"][-1]


def canonical(recs, kinds, drop=()):
    """Records of these kinds without what legitimately differs between two runs (times,
    durations, addresses, stacks, thread ids), sorted."""
    gone = {"time", "tid", "dur_ns", "ptr", "dst", "src", "address", "pool_address", "va",
            "handle", "host_fn", "stack", "pc", "ptrs", *drop}
    def keep(r, k):  # an API record's stream is a cudaStream_t: an address
        return k not in gone and not (k == "stream" and r["kind"] in API)
    out = [json.dumps({k: v for k, v in r.items() if keep(r, k)}, sort_keys=True)
           for r in recs if r["kind"] in kinds]
    return sorted(out)


class Correlation(unittest.TestCase):
    """Every launch has its GPU_KERNEL, every GPU record its API record, one clock."""

    def check(self, name, *args, captured=0):
        """`captured`: launch calls made during a graph capture (recorded, never run)."""
        p, recs = profile(sample(name), *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(cupti_state(recs), "on")
        self.assertEqual(of(recs, "GPU_DROPPED"), [])
        api = collections.defaultdict(list)
        for r in of(recs, *API):
            self.assertGreater(r["corr"], 0, r)
            api[r["corr"]].append(r)
        gpu = of(recs, *GPU)
        for g in gpu:
            self.assertEqual(len(api[g["corr"]]), 1, g)
            call = api[g["corr"]][0]
            if g["kind"] in ("GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET"):
                self.assertGreaterEqual(g["time"], call["time"], (g, call))
        kernels_of = collections.Counter(g["corr"] for g in of(recs, "GPU_KERNEL"))
        ran = collections.Counter()
        for launch in of(recs, "LAUNCH"):
            if launch["api"] not in GRAPH_LAUNCH_APIS and launch["ret"] == 0:
                ran[kernels_of[launch["corr"]]] += 1
        self.assertEqual(set(ran) - {0, 1}, set(), "a launch with several GPU_KERNEL records")
        self.assertEqual(ran[0], captured, "launches without a GPU_KERNEL record")
        # A KERNEL definition precedes every GPU_KERNEL that names it.
        defined = set()
        for r in recs:
            if r["kind"] == "KERNEL":
                defined.add(r["id"])
            elif r["kind"] == "GPU_KERNEL":
                self.assertIn(r["kernel"], defined, r)
        return p, recs

    def kernel_runs(self, recs):
        names = {r["id"]: r["name"] for r in of(recs, "KERNEL")}
        return [(names[k["kernel"]], [k["grid_x"], k["grid_y"], k["grid_z"]],
                 [k["block_x"], k["block_y"], k["block_z"]]) for k in of(recs, "GPU_KERNEL")]

    def test_two_streams_kernels_as_launched(self):
        p, recs = self.check("two_streams")
        led = ledger(p.stdout)
        want = sorted((l["kernel"], l["grid"], l["block"]) for l in led["launches"])
        self.assertEqual(sorted(self.kernel_runs(recs)), want)
        # The two streams stay two CUPTI streams, each with its own launches.
        streams = collections.Counter(k["stream"] for k in of(recs, "GPU_KERNEL"))
        self.assertEqual(sorted(streams.values()), [len(want) // 2, len(want) // 2])

    def test_copies_bytes_by_direction(self):
        p, recs = self.check("copies")
        led = ledger(p.stdout)
        kind = {"h2d": 1, "d2h": 2, "d2d": 8}
        want = sorted((kind[o["dir"]], o["bytes"]) for o in led["ops"] if o["dir"] in kind)
        got = sorted((g["copy_kind"], g["bytes"]) for g in of(recs, "GPU_MEMCPY"))
        self.assertEqual(got, want)
        sets = sorted(o["bytes"] for o in led["ops"] if o["dir"] == "memset")
        self.assertEqual(sorted(g["bytes"] for g in of(recs, "GPU_MEMSET")), sets)

    def test_graph_replays_carry_the_graph_launch(self):
        p, recs = self.check("graph_replay", captured=3)
        led = ledger(p.stdout)
        self.assertEqual(led["captured_launch_calls"], 3)
        names = collections.Counter(n for n, _, _ in self.kernel_runs(recs))
        self.assertEqual(dict(names), led["kernels_executed"])
        graph_launches = [l for l in of(recs, "LAUNCH") if l["api"] in GRAPH_LAUNCH_APIS]
        self.assertEqual(len(graph_launches), led["graph_launches"])
        for gl in graph_launches:
            replay = [g for g in of(recs, *GPU) if g["corr"] == gl["corr"]]
            self.assertEqual(sorted(g["kind"] for g in replay),
                             ["GPU_KERNEL"] * led["graph_kernel_nodes"] + ["GPU_MEMSET"] * led["graph_memset_nodes"], gl)
            self.assertTrue(all(g["graph"] for g in replay), replay)

    def test_train_mlp_and_api_tour(self):
        p, recs = self.check("train_mlp")
        led = ledger(p.stdout)
        self.assertEqual(len(of(recs, "GPU_KERNEL")), led["launches"])
        self.check("api_tour")

    def test_vmm_alloc(self):
        self.check("vmm_alloc")


class LateDelivery(unittest.TestCase):
    """Buffers held until the final forced flush, handed back in reverse order: the same
    records."""

    def test_same_records_when_cupti_delivers_late(self):
        for name in ("train_mlp", "graph_replay"):
            _, normal = profile(sample(name))
            _, late = profile(sample(name), ANATOMIST_SIM_CUPTI_LATE="1")
            kinds = API | GPU | {"KERNEL"}
            self.assertGreater(len(of(late, *GPU)), 0)
            self.assertEqual(canonical(late, kinds), canonical(normal, kinds), name)


class CallsNoHookSaw(unittest.TestCase):
    def test_driver_calls_recorded_by_cupti_match_the_hooks(self):
        """With the driver hooks off, CUPTI's callback records the driver memory calls:
        the same records as the hooks make (but via 1), and the counts of the ledger."""
        p, by_cupti = profile(sample("vmm_alloc"), ANATOMIST_DRIVER_HOOKS="0")
        self.assertEqual(p.returncode, 0, p.stderr)
        _, by_hooks = profile(sample("vmm_alloc"))
        driver = [r for r in of(by_cupti, *API) if r["api"] >= 50]
        self.assertTrue(driver and all(r["via"] == 1 and r["corr"] for r in driver))
        self.assertEqual(canonical(by_cupti, API, drop=("via",)), canonical(by_hooks, API, drop=("via",)))
        calls = collections.Counter(r["api"] for r in driver)
        want = ledger(p.stdout)["driver_calls"]
        names = {57: "cuMemCreate", 63: "cuMemRelease", 72: "cuMemMap", 73: "cuMemUnmap",
                 74: "cuMemSetAccess", 70: "cuMemAddressReserve", 71: "cuMemAddressFree",
                 50: "cuMemAlloc_v2", 60: "cuMemFree_v2"}
        self.assertEqual({names[a]: n for a, n in calls.items()},
                         {k: v for k, v in want.items() if k in names.values()})

    def test_failed_driver_allocation_is_recorded_alike_either_way(self):
        """vmm_alloc on a 64 MiB device: its cuMemAlloc_v2 of 8 MiB fails after 60 MiB of
        cuMemCreate. Hook or CUPTI's callback, the failure is recorded alike and followed by
        the device's MEMINFO (free 0 of 64 MiB)."""
        runs = {}
        for hooks in ("1", "0"):
            p, recs = profile(sample("vmm_alloc"), ANATOMIST_DRIVER_HOOKS=hooks,
                              ANATOMIST_SIM_MEMORY="64MiB")
            self.assertEqual(p.returncode, 1, p.stderr)
            [failed] = [r for r in of(recs, "ALLOC") if r["ret"] != 0]
            self.assertEqual((failed["api"], failed["ret"], failed["size"], failed["via"]),
                             (50, 2, 8 << 20, 0 if hooks == "1" else 1))
            [info] = of(recs, "MEMINFO")
            self.assertEqual((info["free"], info["total"], info["reason"]), (0, 64 << 20, 1))
            self.assertGreater(info["time"], failed["time"])
            runs[hooks] = canonical(recs, API | {"MEMINFO"}, drop=("via",))
        self.assertEqual(runs["1"], runs["0"])


class WithoutCupti(unittest.TestCase):
    def test_unloadable_cupti_gives_the_api_trace_and_one_warning(self):
        env = {"CUDA_HOME": ""}
        p, without = profile(sample("copies"), preload=NO_CUPTI + " " + PRELOAD, **env)
        self.assertEqual(p.returncode, 0, p.stderr)
        warnings = [l for l in p.stderr.splitlines() if l.startswith("anatomist:")]
        self.assertEqual(len(warnings), 1, p.stderr)
        self.assertIn("CUPTI unavailable", warnings[0])
        self.assertTrue(cupti_state(without).startswith("unavailable: "), cupti_state(without))
        self.assertEqual(of(without, *GPU), [])
        _, normal = profile(sample("copies"))
        self.assertEqual(canonical(without, API, drop=("corr",)), canonical(normal, API, drop=("corr",)))
        self.assertTrue(all(r["corr"] == 0 for r in of(without, *API)))

    def test_cupti_off_by_configuration(self):
        p, recs = profile(sample("copies"), ANATOMIST_CUPTI="0")
        self.assertEqual(p.stderr, "")
        self.assertEqual(cupti_state(recs), "off (ANATOMIST_CUPTI=0)")
        self.assertEqual(of(recs, *GPU), [])


class OtherCuptiClients(unittest.TestCase):
    def test_a_client_there_first_keeps_cupti(self):
        p, recs = profile(CUPTI_FIRST, "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(ledger(p.stdout), {"mallocs": 3, "callbacks": 3, "subscribe": 0})
        self.assertEqual(cupti_state(recs), "taken by another tool: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.assertEqual(p.stderr.count("CUPTI is in use by another tool"), 1, p.stderr)
        self.assertEqual(sorted(r["size"] for r in of(recs, "ALLOC")), [1 << 20, 2 << 20, 3 << 20])

    def test_the_program_becoming_a_client_gets_cupti(self):
        for when in ("early", "late"):
            p, recs = profile(sample("cupti_user"), "--when", when)
            self.assertEqual(p.returncode, 0, p.stderr)
            led = ledger(p.stdout)
            after = led["launches_after_setup"]
            self.assertEqual(led["kernel_records"], after, when)
            self.assertEqual(led["callbacks_seen"], after, when)
            self.assertEqual(led["dropped_records"], 0)
            self.assertEqual(len(of(recs, "LAUNCH")), led["launches_before_setup"] + after)
            self.assertEqual(len(of(recs, "GPU_KERNEL")), led["launches_before_setup"], when)
            if when == "early":  # a client before the first CUDA call: ours never starts
                self.assertEqual(cupti_state(recs), "taken by another tool: the program "
                                 "registered its own activity buffers first")
            else:
                self.assertTrue(cupti_state(recs).startswith("on until the program called "), when)
            self.assertEqual(p.stderr.count("anatomist:"), 1, p.stderr)


# GCC 12's AddressSanitizer allocator takes no lock around fork: a child forked while
# another thread (here the simulated CUPTI's worker or the profiler's writer) is inside
# malloc inherits that lock held and hangs at its first allocation (google/sanitizers#1814;
# glibc's malloc is fork-safe). The other builds run this; the sanitizer build the rest.
@unittest.skipIf(SANITIZER_RUNTIME, "fork of a multithreaded process hangs in this ASan runtime")
class Fork(unittest.TestCase):
    def test_a_forked_child_records_api_calls_only(self):
        d = tmpdir()
        e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD,
                      ANATOMIST_OUTPUT=os.path.join(d, "f-%p.anat"))
        p = run([sample("fork_child")], env=e)
        self.assertEqual(p.returncode, 0, p.stderr)
        busy = [l.split()[1] for l in p.stdout.splitlines() if l.startswith("busy ")][0]
        recs = dump(os.path.join(d, "f-%s.anat" % busy))
        self.assertEqual(cupti_state(recs), "off in a forked child (CUPTI does not survive fork)")
        self.assertEqual(of(recs, *GPU), [])
        self.assertGreater(len(of(recs, "ALLOC")), 0)

    def test_a_child_forked_before_the_first_cuda_call_gets_gpu_activity(self):
        # As on a GPU (ANATOMIST_SIM_FORK_STRICT=1), a child forked after anything
        # initialised CUDA has every CUDA call fail: the preload must not have initialised
        # it (CUPTI included) in the parent, whose only CUDA activity before the fork is
        # nvcc's registration of its kernel (and an NVTX range).
        d, n = tmpdir(), 7
        e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_SIM_FORK_STRICT="1",
                      ANATOMIST_OUTPUT=os.path.join(d, "e-%p.anat"))
        p = run([sample("fork_child"), "early", str(n)], env=e)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("forked after CUDA was initialised", p.stderr)
        child, status = p.stdout.split()[1:3]
        self.assertEqual(status, "0", "the child's CUDA calls failed: " + p.stderr)
        recs = dump(os.path.join(d, "e-%s.anat" % child))
        self.assertEqual(cupti_state(recs), "on")
        launches = [r for r in of(recs, "LAUNCH") if r["ret"] == 0]
        self.assertEqual(len(launches), n)
        kernels = of(recs, "GPU_KERNEL")
        self.assertEqual(len(kernels), n)
        self.assertEqual(sorted(k["corr"] for k in kernels), sorted(l["corr"] for l in launches))
        others = [f for f in os.listdir(d) if f.endswith(".anat") and f != "e-%s.anat" % child]
        self.assertEqual(len(others), 1, others)
        parent = dump(os.path.join(d, others[0]))
        self.assertEqual(cupti_state(parent), "on")
        self.assertEqual(len(of(parent, "GPU_KERNEL")), 1)

    def test_the_fork_check_fails_when_cuda_was_initialised_before_the_fork(self):
        # The check itself: with CUDA initialised in the parent (fork_child's first mode
        # allocates before forking), the strict child's calls fail, and the sim says why.
        d = tmpdir()
        e = clean_env(LD_LIBRARY_PATH=SIM_LIB, ANATOMIST_SIM_FORK_STRICT="1")
        p = run([sample("fork_child")], env=e)
        busy = [l.split() for l in p.stdout.splitlines() if l.startswith("busy ")][0]
        self.assertEqual(busy[2], "1", "the child's cudaMalloc must fail")
        self.assertIn("was forked after CUDA was initialised (by cudaMalloc in process", p.stderr)


if __name__ == "__main__":
    unittest.main()
