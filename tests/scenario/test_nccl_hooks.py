"""NCCL calls under the preload, ranks as processes (docs/trace-format.md, "Library calls").

tests/scenario/nccl_probe.c starts 2, then 4 ranks (fork + exec of itself, the unique id in
the environment); each makes a communicator, runs AllReduce/Broadcast/AllGather/
ReduceScatter, a Send/Recv pair in a group, a Reduce in a doubly nested group, two splits
(by parity with key = -rank; with rank 0 passing NCCL_SPLIT_NOCOLOR) with an operation on
each child, and destroys everything, checking every result. It writes each rank's ledger.
On the sim's libnccl.so.2 with CUPTI on, each rank's trace must hold its ledger's COLL
sequence (values computed here: bytes from the type sizes, seq per communicator), the same
collective sequence on every rank, comm_ids that agree where the communicator is shared and
differ where it is not, COMM ranks and sizes as NCCL's split rule gives them, kernels
linked to the operation's call (the outermost ncclGroupEnd's for grouped operations) and
the communicators' buffers attributed to NCCL."""
import json
import os
import unittest

from common import BUILD, PRELOAD, SIM_LIB, clean_env, dump, of, run, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_nccl_probe")
HAVE_SIM = os.path.exists(os.path.join(SIM_LIB, "libnccl.so.2"))

# docs/trace-format.md, api numbers (1.2).
API = {"ncclAllReduce": 170, "ncclReduce": 171, "ncclBroadcast": 172, "ncclBcast": 173, "ncclAllGather": 174,
       "ncclReduceScatter": 175, "ncclSend": 176, "ncclRecv": 177}
INIT_RANK, SPLIT, DESTROY, FINALIZE, GROUP_START, GROUP_END = 160, 163, 164, 166, 178, 179
# ncclDataType_t → bytes (nccl.h): int8, uint8, int32, uint32, int64, uint64, float16,
# float32, float64, bfloat16, fp8 e4m3, fp8 e5m2.
DTYPE_BYTES = [1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1]
CHANNEL_BYTES = 4 << 20  # the sim's buffers per communicator (docs/sim.md "NCCL")


def job(nranks):
    """Runs the probe with nranks ranks; returns [(ledger, records)] by rank."""
    d = tmpdir()
    p = run([PROBE, str(nranks), d], timeout=120,
            env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD,
                          ANATOMIST_OUTPUT=os.path.join(d, "t.%p.anat")))
    assert p.returncode == 0, p.stdout + p.stderr
    ranks = []
    for r in range(nranks):
        with open(os.path.join(d, "rank%d.json" % r)) as f:
            led = json.load(f)
        assert led["ok"], led
        ranks.append((led, dump(os.path.join(d, "t.%d.anat" % led["pid"]))))
    return ranks


def split_rank(members, key, me):
    """NCCL's rank of `me` in a split: members ordered by (key, parent rank)."""
    order = sorted(members, key=lambda q: (key(q), q))
    return order.index(me), len(order)


class Job:
    def check(self, t, ranks, n):
        t.assertEqual(len(ranks), n)
        comm_ids = []
        for r, (led, recs) in enumerate(ranks):
            comm_ids.append(self.check_rank(t, r, n, led, recs))
        world = {c["world"] for c in comm_ids}
        t.assertEqual(len(world), 1, "ranks disagree on the communicator's comm_id")
        for color in (0, 1):
            ids = {c["split0"] for r, c in enumerate(comm_ids) if r % 2 == color}
            t.assertEqual(len(ids), 1, "a color's ranks disagree on the split's comm_id")
        t.assertNotEqual(comm_ids[0]["split0"], comm_ids[1]["split0"], "two colors, one comm_id")
        s1 = {c["split1"] for c in comm_ids[1:]}
        t.assertEqual(len(s1), 1)
        t.assertEqual(len(world | {comm_ids[0]["split0"], comm_ids[1]["split0"]} | s1), 4)
        # Collectives of the world communicator: the same sequence on every rank.
        seqs = [[(c["api"], c["count"], c["dtype"], c["bytes"], c["op"], c["peer"], c["seq"])
                 for c in of(recs, "COLL") if c["comm"] == led["comm"] and c["api"] not in (176, 177)]
                for led, recs in ranks]
        t.assertTrue(all(s == seqs[0] for s in seqs), seqs)
        t.assertEqual(len(seqs[0]), 5)

    def check_rank(self, t, r, n, led, recs):
        handles = {"world": led["comm"], "split0": led["split0"], "split1": led["split1"]}
        colls = of(recs, "COLL")
        t.assertEqual(len(colls), len(led["ops"]))
        seq = {}
        for c, op in zip(colls, led["ops"]):
            seq[op["comm"]] = seq.get(op["comm"], 0) + 1
            want = {"api": API[op["api"]], "ret": 0, "comm": handles[op["comm"]], "stream": led["stream"],
                    "count": op["count"], "dtype": op["dtype"], "bytes": op["count"] * DTYPE_BYTES[op["dtype"]],
                    "op": op["op"], "peer": op["peer"], "sendbuff": op["sendbuff"], "recvbuff": op["recvbuff"],
                    "group": op["group"], "seq": seq[op["comm"]]}
            t.assertEqual({k: c[k] for k in want}, want, op)
        t.assertEqual([g["arg"] for g in of(recs, "LIBCALL") if g["lib"] == 3], [1, 0, 1, 2, 1, 0])
        self.check_kernels(t, recs)

        comms = of(recs, "COMM")
        t.assertEqual([c["api"] for c in comms],
                      [INIT_RANK, SPLIT, SPLIT] + ([DESTROY] if r == 0 else [DESTROY, DESTROY]) + [FINALIZE, DESTROY])
        init, s0, s1 = comms[0], comms[1], comms[2]
        t.assertEqual((init["comm"], init["rank"], init["size"], init["device"], init["ret"]),
                      (led["comm"], r, n, 0, 0))
        want0 = split_rank([q for q in range(n) if q % 2 == r % 2], lambda q: -q, r)
        t.assertEqual((s0["comm"], s0["rank"], s0["size"], s0["parent"], s0["color"], s0["key"]),
                      (led["split0"], want0[0], want0[1], led["comm"], r % 2, -r))
        if r == 0:
            t.assertEqual((s1["comm"], s1["rank"], s1["size"], s1["color"]), (0, -1, -1, -1))
        else:
            want1 = split_rank(range(1, n), lambda q: q, r)
            t.assertEqual((s1["comm"], s1["rank"], s1["size"], s1["color"]), (led["split1"], *want1, 0))
        for c in comms[3:]:  # destroy/finalize name the communicator's id
            t.assertEqual(c["comm_id"], {led["comm"]: init["comm_id"], led["split0"]: s0["comm_id"],
                                         led["split1"]: s1["comm_id"]}[c["comm"]])
        # The sim's channel buffers: one per communicator made, inside the call that made it.
        bufs = [a for a in of(recs, "ALLOC") if a["size"] == CHANNEL_BYTES]
        made = [c for c in comms[:3] if c["comm"]]
        t.assertEqual([(a["lib"], a["call"]) for a in bufs], [(3, c["call"]) for c in made])
        return {"world": init["comm_id"], "split0": s0["comm_id"], "split1": None if r == 0 else s1["comm_id"]}

    def check_kernels(self, t, recs):
        """Each operation's kernels are launched by its own call, or by the outermost
        ncclGroupEnd after it when grouped."""
        kernels = {k["corr"] for k in of(recs, "GPU_KERNEL")}
        ends = [g["call"] for g in of(recs, "LIBCALL") if g["api"] == GROUP_END and g["arg"] == 0]
        for c in of(recs, "COLL"):
            owner = c["call"] if c["group"] == 0 else min(e for e in ends if e > c["call"])
            launches = [l for l in of(recs, "LAUNCH") if l["call"] == owner]
            t.assertGreaterEqual(len(launches), 1, c)
            t.assertTrue(all(l["lib"] == 3 and l["corr"] in kernels for l in launches), launches)


@unittest.skipUnless(os.path.exists(PROBE) and HAVE_SIM, "the probe or the sim's NCCL is not built")
class NcclHooks(unittest.TestCase):
    def test_two_ranks(self):
        Job().check(self, job(2), 2)

    def test_four_ranks(self):
        Job().check(self, job(4), 4)


if __name__ == "__main__":
    unittest.main()
