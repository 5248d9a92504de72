"""Data-parallel training as N processes under `anatomist run` (samples/ddp_allreduce.cu on
the sim's libnccl.so.2): one trace per rank, each holding its own collectives.

`anatomist run --sim -o DIR/ddp-%p.anat -- ddp_allreduce --ranks N` starts the launcher,
which spawns N rank processes; each rank prints its ledger (the collectives it issued)
and the launcher the ranks' exit statuses. For 2 and 4 ranks the test checks:

* one trace per rank (PROCESS.pid and rank), each ended cleanly; the launcher's own
  trace, if any, holds no NCCL or CUDA work;
* per rank, the COLL records in issue order equal the ledger expanded in the program's
  order (broadcast; per step allreduce, allgather, reducescatter, send, recv; the split's
  allreduce), `seq` 1..n per communicator, the world communicator's sequence identical
  on every rank, comm_ids shared where the communicator is (the split's computed with the
  documented FNV-1a rule from the world's), COMM rank/size/device/color/key right;
* each collective's one kernel launched inside its call (a group's one SendRecv kernel
  inside its ncclGroupEnd), named as docs/sim.md names it, lasting
  llround(5000 + wire_bytes / 150) ns (docs/sim.md, "Timing");
* across ranks: kernels of one operation start no earlier than every rank's call began
  and every rank's stream was free (the latest rank's ready time), and every rank's
  call overlaps every other's (they meet in the call) — all on one CLOCK_MONOTONIC;
* the communicators' 4 MiB channel buffers allocated and freed by NCCL inside the calls
  that made and destroyed them;
* `anatomist report --json`: collectives (count, gpu_ns, algbw/busbw as nccl-tests
  defines them) and communicators, all computed here from the ledger and the formulas."""
import glob
import json
import math
import os
import unittest

from common import SIM_LIB, anatomist, clean_env, dump, of, sample, tmpdir

DDP = sample("ddp_allreduce")
HAVE_SIM = os.path.exists(os.path.join(SIM_LIB, "libnccl.so.2"))

STEPS = 2
ELEMS = 100000  # docs/sim.md's example: an AllReduce of 100 000 floats on 2 ranks is 7667 ns

# docs/trace-format.md, api numbers (1.2)
API = {"ncclAllReduce": 170, "ncclBroadcast": 172, "ncclAllGather": 174, "ncclReduceScatter": 175,
       "ncclSend": 176, "ncclRecv": 177}
INIT_RANK, SPLIT, DESTROY = 160, 163, 164
GROUP_START, GROUP_END = 178, 179
CU_MEM_ALLOC, CU_MEM_FREE = 50, 60
LIB_NCCL = 3
# nccl.h
DTYPE_BYTES = {7: 4}  # ncclFloat32
REDOP = {"ncclSum": 0}
# docs/sim.md, "Communicators", "Kernels" and "Timing"
CHANNEL_BYTES = 4 << 20
LAUNCH_NS, LINK_BYTES_PER_NS = 5000.0, 150.0
KERNEL = {"ncclAllReduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
          "ncclBroadcast": "ncclDevKernel_Broadcast_RING_LL",
          "ncclAllGather": "ncclDevKernel_AllGather_RING_LL",
          "ncclReduceScatter": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
          "group": "ncclDevKernel_SendRecv"}
REPORT_OP = {"ncclAllReduce": "AllReduce", "ncclBroadcast": "Broadcast", "ncclAllGather": "AllGather",
             "ncclReduceScatter": "ReduceScatter", "ncclSend": "Send", "ncclRecv": "Recv"}


def llround(x):
    return math.floor(x + 0.5)  # x > 0 here


def mangled(k):
    """The device name of NCCL's `__global__ void K(ncclDevKernelArgsStorage<4096>)`."""
    return "_Z%d%s24ncclDevKernelArgsStorageILm4096EE" % (len(k), k)


def kernel_ns(op, n, count, es):
    """docs/sim.md, "Timing": a collective's kernel duration on n ranks."""
    if op == "ncclAllReduce":
        wire = 2.0 * (n - 1) * (count * es) / n
    elif op in ("ncclAllGather", "ncclReduceScatter"):
        wire = (n - 1) * (n * count * es) / n
    elif op == "ncclBroadcast":
        wire = 0.0 if n == 1 else float(count * es)
    else:
        raise AssertionError(op)
    return llround(LAUNCH_NS + wire / LINK_BYTES_PER_NS)


def sendrecv_ns(n, sent_bytes):
    return llround(LAUNCH_NS + (0.0 if n == 1 else sent_bytes) / LINK_BYTES_PER_NS)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def split_comm_id(parent_id, index, color):
    """docs/trace-format.md, COMM.comm_id of ncclCommSplit."""
    return fnv1a64(parent_id.to_bytes(8, "little") + index.to_bytes(4, "little")
                   + color.to_bytes(4, "little", signed=True))


def split_members(n, color):
    return [q for q in range(n) if q % 2 == color]


def issue_order(led):
    """The ledger's collectives in the order ddp_allreduce issues them: the broadcast, then
    per step the ops counted once per step (in first-seen order), then the split's
    allreduce. Checks that the ledger has that shape."""
    ops = led["collectives"]
    pre, post = ops[0], ops[-1]
    loop = ops[1:-1]
    assert (pre["op"], pre["comm"], pre["calls"]) == ("ncclBroadcast", "world", 1), pre
    assert (post["op"], post["comm"], post["calls"]) == ("ncclAllReduce", "split", 1), post
    assert [o["op"] for o in loop] == ["ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
                                       "ncclSend", "ncclRecv"], loop
    assert all(o["calls"] == led["steps"] and o["comm"] == "world" for o in loop), loop
    order = [pre] + loop * led["steps"] + [post]
    assert len(order) == led["calls"], (len(order), led["calls"])
    return order


def job(n):
    """Runs the launcher with n ranks under `anatomist run`; returns (ledgers by rank,
    launcher line, {pid: records} of every trace written)."""
    d = tmpdir()
    r = anatomist("run", "--sim", "-q", "-o", os.path.join(d, "ddp-%p.anat"), "--", DDP,
                  "--ranks", str(n), "--steps", str(STEPS), "--elems", str(ELEMS),
                  env=clean_env(ANATOMIST_SIM_NCCL_TIMEOUT_MS="30000"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    leds = [json.loads(l[len("ledger "):]) for l in r.stdout.splitlines() if l.startswith("ledger ")]
    launcher = [json.loads(l[len("launcher "):]) for l in r.stdout.splitlines()
                if l.startswith("launcher ")]
    assert len(launcher) == 1, r.stdout
    verified = sorted(l for l in r.stdout.splitlines() if l.endswith(" verified"))
    want = sorted("rank %d step %d verified" % (q, s) for q in range(n) for s in range(STEPS))
    assert verified == want, r.stdout
    traces = {}
    for f in glob.glob(os.path.join(d, "*.anat")):
        recs = dump(f)
        procs = of(recs, "PROCESS")
        assert len(procs) == 1, f
        traces[procs[0]["pid"]] = (f, recs)
    return sorted(leds, key=lambda l: l["rank"]), launcher[0], traces


def report_json_all(trace):
    """`anatomist report --json --top 0`: every collective, none cut."""
    r = anatomist("report", trace, "--json", "--top", "0")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class Rank:
    """One rank's trace, indexed."""

    def __init__(self, path, recs):
        self.path, self.recs = path, recs
        self.process = of(recs, "PROCESS")[0]
        self.colls = of(recs, "COLL")
        self.comms = of(recs, "COMM")
        self.launches = of(recs, "LAUNCH")
        self.kernels = {k["corr"]: k for k in of(recs, "GPU_KERNEL")}
        self.names = {k["id"]: k["name"] for k in of(recs, "KERNEL")}
        self.libcalls = [c for c in of(recs, "LIBCALL") if c["lib"] == LIB_NCCL]

    def kernels_of_call(self, call):
        """The GPU_KERNEL records of the LAUNCHes made inside library call `call`."""
        ls = [l for l in self.launches if l["call"] == call]
        assert all(l["lib"] == LIB_NCCL and l["ret"] == 0 for l in ls), ls
        return [self.kernels[l["corr"]] for l in ls if l["corr"] in self.kernels], ls

    def stream_ops(self, stream):
        """(start, end) of every kernel and copy the device ran on CUPTI stream `stream`."""
        ops = [(g["time"], g["time"] + g["dur_ns"]) for g in of(self.recs, "GPU_KERNEL", "GPU_MEMCPY",
                                                                 "GPU_MEMSET") if g["stream"] == stream]
        return sorted(ops)


@unittest.skipUnless(os.path.exists(DDP) and HAVE_SIM, "ddp_allreduce or the sim's NCCL is not built")
class DdpRanks(unittest.TestCase):
    def run_job(self, n):
        leds, launcher, traces = job(n)

        # The launcher: every rank exited 0; one trace per rank process.
        self.assertTrue(launcher["ok"], launcher)
        self.assertEqual(launcher["world_size"], n)
        self.assertEqual([(q["rank"], q.get("exit")) for q in launcher["ranks"]], [(q, 0) for q in range(n)])
        pids = [q["pid"] for q in launcher["ranks"]]
        self.assertEqual(len(leds), n)
        for q, led in enumerate(leds):
            self.assertEqual((led["rank"], led["world_size"], led["local_rank"], led["steps"], led["elems"]),
                             (q, n, q, STEPS, ELEMS))
            self.assertEqual(led["verified"], 4 * STEPS + 2)  # broadcast, 4 per step, split
        self.assertTrue(set(pids) <= set(traces), (pids, sorted(traces)))
        others = [pid for pid in traces if pid not in pids]
        self.assertLessEqual(len(others), 1, "traces of unknown processes: %s" % others)
        for pid in others:  # the launcher's: it spawned the ranks and did no CUDA or NCCL work
            path, recs = traces[pid]
            self.assertEqual(of(recs, "PROCESS")[0]["rank"], -1, path)
            self.assertEqual(of(recs, "COLL", "COMM", "LIBCALL", "LAUNCH", "GPU_KERNEL", "ALLOC", "MEMCPY"), [],
                             path)
        ranks = [Rank(*traces[pid]) for pid in pids]
        for q, rk in enumerate(ranks):
            self.assertEqual((rk.process["rank"], rk.process["pid"]), (q, pids[q]), rk.path)

        ids = [self.check_rank(q, n, leds[q], rk) for q, rk in enumerate(ranks)]
        self.check_communicators(ids)
        self.check_world_sequence(ranks)
        self.check_cross_rank_timing(n, ranks)
        self.check_report(n, leds[-1], ranks[-1], ids[-1])

    # ------------------------------------------------------------ one rank

    def check_rank(self, q, n, led, rk):
        """COLL and COMM records against the ledger; kernels and buffers. Returns the
        rank's comm_ids."""
        self.assertEqual([c["api"] for c in rk.comms], [INIT_RANK, SPLIT, DESTROY, DESTROY], rk.path)
        init, split, d_split, d_world = rk.comms
        color = q % 2
        members = split_members(n, color)
        # ddp_allreduce: ncclCommSplit(comm, rank % 2, rank): members ranked by (key, parent rank)
        self.assertEqual({k: init[k] for k in ("ret", "rank", "size", "device", "parent", "color", "key")},
                         {"ret": 0, "rank": q, "size": n, "device": 0, "parent": 0, "color": 0, "key": 0})
        self.assertEqual({k: split[k] for k in ("ret", "rank", "size", "device", "parent", "color", "key")},
                         {"ret": 0, "rank": members.index(q), "size": len(members), "device": 0,
                          "parent": init["comm"], "color": color, "key": q})
        self.assertEqual((led["split"]["color"], led["split"]["size"]), (color, len(members)))
        self.assertEqual(split["comm_id"], split_comm_id(init["comm_id"], 0, color))
        self.assertNotEqual(split["comm"], init["comm"])
        for dc, made in ((d_split, split), (d_world, init)):
            self.assertEqual((dc["ret"], dc["comm"], dc["comm_id"], dc["rank"], dc["size"], dc["device"]),
                             (0, made["comm"], made["comm_id"], -1, -1, -1))
        handle = {"world": init["comm"], "split": split["comm"]}
        size = {"world": n, "split": len(members)}

        # COLL records: the ledger in issue order.
        order = issue_order(led)
        self.assertEqual(len(rk.colls), len(order), rk.path)
        streams = {c["stream"] for c in rk.colls}
        self.assertEqual(len(streams), 1, "ddp_allreduce uses one stream")
        seq = {}
        for c, op in zip(rk.colls, order):
            seq[op["comm"]] = seq.get(op["comm"], 0) + 1
            es = DTYPE_BYTES[op["datatype_id"]]
            self.assertEqual(op["bytes"], op["count"] * es, op)
            grouped = op["op"] in ("ncclSend", "ncclRecv")
            want = {"api": API[op["op"]], "ret": 0, "comm": handle[op["comm"]], "count": op["count"],
                    "dtype": op["datatype_id"], "bytes": op["count"] * es, "op": REDOP.get(op.get("redop"), 0),
                    "peer": op.get("root", op.get("peer", -1)), "group": 1 if grouped else 0,
                    "seq": seq[op["comm"]]}
            self.assertEqual({k: c[k] for k in want}, want, (rk.path, op))
        self.assertEqual(seq, {"world": 1 + 5 * STEPS, "split": 1})
        # Send to rank+1, receive from rank-1 (the ledger says so too).
        self.assertEqual({c["peer"] for c in rk.colls if c["api"] == API["ncclSend"]}, {(q + 1) % n})
        self.assertEqual({c["peer"] for c in rk.colls if c["api"] == API["ncclRecv"]}, {(q - 1) % n})
        self.assertEqual([g["arg"] for g in rk.libcalls], [1, 0] * STEPS)
        self.assertEqual([g["api"] for g in rk.libcalls], [GROUP_START, GROUP_END] * STEPS)

        self.check_kernels(n, rk, order, size, led)
        self.check_buffers(rk, init, split, d_split, d_world)
        return {"world": init["comm_id"], "split": split["comm_id"]}

    def check_kernels(self, n, rk, order, size, led):
        """One kernel per collective inside its own call; one SendRecv kernel per group
        inside its ncclGroupEnd; names, shapes and durations per docs/sim.md."""
        linked = set()
        for c, op in zip(rk.colls, order):
            if c["group"]:
                continue
            ks, ls = self.one_kernel(rk, c["call"], op["op"])
            k = ks[0]
            self.assertEqual((k["grid_x"], k["block_x"]), (2, 512), k)
            self.assertEqual(k["dur_ns"], kernel_ns(op["op"], size[op["comm"]], op["count"],
                                                   DTYPE_BYTES[op["datatype_id"]]), (rk.path, op, k))
            linked.add(k["corr"])
        ends = [g for g in rk.libcalls if g["api"] == GROUP_END]
        for step, end in enumerate(ends):
            members = [c for c in rk.colls if c["group"] and c["call"] < end["call"]][2 * step:2 * step + 2]
            self.assertEqual([c["api"] for c in members], [API["ncclSend"], API["ncclRecv"]])
            ks, ls = self.one_kernel(rk, end["call"], "group")
            k = ks[0]
            self.assertEqual((k["grid_x"], k["block_x"]), (2, 640), k)
            sent = members[0]["bytes"]
            self.assertEqual(k["dur_ns"], sendrecv_ns(n, sent), (rk.path, k))
            linked.add(k["corr"])
        # Nothing else launched by NCCL; the program's own kernel once per step, outside.
        nccl = [l for l in rk.launches if l["lib"] == LIB_NCCL]
        self.assertEqual(len(nccl), len(linked))
        own = [l for l in rk.launches if l["lib"] == 0]
        self.assertEqual((len(own), {l["call"] for l in own}), (led["launches"], {0}))

    def one_kernel(self, rk, call, what):
        ks, ls = rk.kernels_of_call(call)
        self.assertEqual((len(ls), len(ks)), (1, 1), (rk.path, call, what, ls))
        # docs/sim.md, "Cost model": work starts no earlier than the host submitted it
        self.assertGreaterEqual(ks[0]["time"], ls[0]["time"], (rk.path, call))
        self.assertEqual(rk.names.get(ks[0]["kernel"]), mangled(KERNEL[what]), (rk.path, call))
        return ks, ls

    def check_buffers(self, rk, init, split, d_split, d_world):
        """docs/sim.md: each communicator's 4 MiB of channel buffers, cuMemAlloc_v2 inside the
        call that made it, cuMemFree_v2 inside the destroy."""
        allocs = [a for a in of(rk.recs, "ALLOC") if a["lib"] == LIB_NCCL]
        self.assertEqual([(a["api"], a["ret"], a["size"], a["call"]) for a in allocs],
                         [(CU_MEM_ALLOC, 0, CHANNEL_BYTES, init["call"]),
                          (CU_MEM_ALLOC, 0, CHANNEL_BYTES, split["call"])], rk.path)
        frees = [f for f in of(rk.recs, "FREE") if f["lib"] == LIB_NCCL]
        self.assertEqual([(f["api"], f["ret"], f["ptr"], f["call"]) for f in frees],
                         [(CU_MEM_FREE, 0, allocs[1]["ptr"], d_split["call"]),
                          (CU_MEM_FREE, 0, allocs[0]["ptr"], d_world["call"])], rk.path)

    # ------------------------------------------------------------ across ranks

    def check_communicators(self, ids):
        self.assertEqual(len({i["world"] for i in ids}), 1, "ranks disagree on the world comm_id")
        by_color = {}
        for q, i in enumerate(ids):
            by_color.setdefault(q % 2, set()).add(i["split"])
        self.assertEqual({c: len(s) for c, s in by_color.items()}, {0: 1, 1: 1}, by_color)
        self.assertEqual(len({ids[0]["world"], ids[0]["split"], ids[1]["split"]}), 3)

    def check_world_sequence(self, ranks):
        """The world communicator's operations: the same on every rank, in the same order."""
        seqs = []
        for rk in ranks:
            world = rk.comms[0]["comm"]
            seqs.append([(c["api"], c["count"], c["dtype"], c["bytes"], c["op"], c["seq"], c["group"])
                         + ((c["peer"],) if c["api"] == API["ncclBroadcast"] else ())
                         for c in rk.colls if c["comm"] == world])
        for s in seqs[1:]:
            self.assertEqual(s, seqs[0])
        self.assertEqual(len(seqs[0]), 1 + 5 * STEPS)

    def check_cross_rank_timing(self, n, ranks):
        """docs/sim.md, "Timing": a collective's kernel starts no earlier than the latest
        rank's stream ready time, which is no earlier than that rank's call began nor than
        the end of the work already on its stream; the ranks meet inside the call. A
        group's SendRecv kernel waits likewise for the sender of the message it receives.
        Every trace's times are CLOCK_MONOTONIC of this host."""
        def ready_floor(rk, c, k):
            """What a rank's stream ready time at call c is at least: the call's start, and
            the end of the work its stream ran before c's kernel k."""
            before = [end for start, end in rk.stream_ops(k["stream"]) if start < k["time"]]
            return max([c["time"]] + before[-1:])

        # Joining: every rank's ncclCommInitRank returns only when all have joined.
        inits = [rk.comms[0] for rk in ranks]
        for a in inits:
            for b in inits:
                self.assertLessEqual(a["time"], b["time"] + b["dur_ns"], "ranks never met in ncclCommInitRank")

        per_seq = {}
        for rk in ranks:
            world = rk.comms[0]["comm"]
            for c in rk.colls:
                if c["comm"] == world and not c["group"]:
                    per_seq.setdefault(c["seq"], []).append((rk, c, rk.kernels_of_call(c["call"])[0][0]))
        self.assertEqual(len(per_seq), 1 + 3 * STEPS)
        for s, calls in sorted(per_seq.items()):
            self.assertEqual(len(calls), n)
            latest = max(ready_floor(rk, c, k) for rk, c, k in calls)
            for rk, c, k in calls:
                self.assertGreaterEqual(k["time"], latest,
                                        "seq %d: rank %d's kernel starts before the latest rank was ready"
                                        % (s, rk.process["rank"]))
                for _, c2, _ in calls:  # they meet inside the call
                    self.assertLessEqual(c["time"], c2["time"] + c2["dur_ns"], "seq %d" % s)
        # SendRecv: rank q receives from q-1, whose send was published no earlier than
        # its ncclSend call began.
        for q, rk in enumerate(ranks):
            prev = ranks[(q - 1) % n]
            ends = [g for g in rk.libcalls if g["api"] == GROUP_END]
            sends = [c for c in prev.colls if c["api"] == API["ncclSend"]]
            for step, end in enumerate(ends):
                k = rk.kernels_of_call(end["call"])[0][0]
                self.assertGreaterEqual(k["time"], sends[step]["time"], "rank %d step %d" % (q, step))
                self.assertGreaterEqual(k["time"], ready_floor(rk, end, k))

    # ------------------------------------------------------------ the report

    def check_report(self, n, led, rk, ids):
        """`anatomist report --json` of one rank against values computed from its ledger."""
        rep = report_json_all(rk.path)
        proc = rep["trace"]["process"]
        self.assertEqual((proc["rank"], proc["local_rank"], proc["world_size"]), (led["rank"], led["rank"], n))
        q = led["rank"]
        color = q % 2
        sizes = {"world": n, "split": len(split_members(n, color))}
        cid = {"world": "0x%016x" % ids["world"], "split": "0x%016x" % ids["split"]}
        p2p = {o["op"]: o["bytes"] for o in led["collectives"] if o["op"] in ("ncclSend", "ncclRecv")}
        want = {}
        for op in led["collectives"]:
            m, es, calls = sizes[op["comm"]], DTYPE_BYTES[op["datatype_id"]], op["calls"]
            if op["op"] in ("ncclSend", "ncclRecv"):
                # the group's SendRecv kernel, split by bytes between its send and its recv
                # (floor(gpu_ns x bytes / sum of the group's bytes), docs/report-schema.md)
                per = sendrecv_ns(n, p2p["ncclSend"]) * op["bytes"] // (p2p["ncclSend"] + p2p["ncclRecv"])
                gpu, grouped = per * calls, calls
            else:
                gpu, grouped = kernel_ns(op["op"], m, op["count"], es) * calls, 0
            big = op["bytes"] * m if op["op"] in ("ncclAllGather", "ncclReduceScatter") else op["bytes"]
            factor = {"ncclAllReduce": 2.0 * (m - 1) / m, "ncclAllGather": (m - 1) / m,
                      "ncclReduceScatter": (m - 1) / m}.get(op["op"], 1.0)
            algbw = big / (gpu / calls)  # bytes per ns = GB/s
            key = (REPORT_OP[op["op"]], op["bytes"], cid[op["comm"]])
            want[key] = {"dtype": "fp32", "ranks": m, "count": calls, "grouped": grouped, "gpu_ns": gpu,
                         "algbw_gbps": algbw, "busbw_gbps": algbw * factor}
        got = {(e["op"], e["bytes"], e["comm_id"]): e for e in rep["collectives"]}
        self.assertEqual(sorted(got), sorted(want))
        for key, w in want.items():
            e = got[key]
            for f in ("dtype", "ranks", "count", "grouped", "gpu_ns"):
                self.assertEqual(e[f], w[f], (key, f, e))
            for f in ("algbw_gbps", "busbw_gbps"):
                self.assertAlmostEqual(e[f], w[f], delta=1e-5 * max(1.0, w[f]), msg=(key, f, e))
            if key[0] in ("Send", "Recv"):
                self.assertEqual((e["algorithm"], e["protocol"]), (None, None))
            else:
                self.assertEqual((e["algorithm"], e["protocol"]), ("RING", "LL"))
        comms = rep["communicators"]
        self.assertEqual([(c["comm_id"], c["rank"], c["size"], c["device"], c["created_by"], c["parent_comm_id"],
                           c["color"], c["key"]) for c in comms],
                         [(cid["world"], q, n, 0, "ncclCommInitRank", None, None, None),
                          (cid["split"], split_members(n, color).index(q), sizes["split"], 0,
                           "ncclCommSplit", cid["world"], color, q)])
        for c, which in zip(comms, ("world", "split")):
            mine = [w for k, w in want.items() if k[2] == cid[which]]
            self.assertEqual((c["collectives"], c["gpu_ns"]),
                             (sum(w["count"] for w in mine), sum(w["gpu_ns"] for w in mine)), c)

    def test_two_ranks(self):
        self.run_job(2)

    def test_four_ranks(self):
        self.run_job(4)


if __name__ == "__main__":
    unittest.main()
