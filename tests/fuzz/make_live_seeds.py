#!/usr/bin/env python3
"""Writes the seeds of fuzz_live (corpus/live/): small live files (format/live.h) laid out
by hand — a 4096-byte header, a 1 KiB definitions ring, slots of a 4096-byte header and a
1 KiB ring — holding STACK, KERNEL, ALLOC, FREE and LAUNCH records: a plain one, a ring
that wraps, a pending range, drops, an END, two slots of one thread. Run once; the seeds
are checked in."""
import os
import struct
import sys

RING = 1024
TRACE_ID = 0x1234567890abcdef


def uv(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def sv(n):
    return uv((n << 1) ^ (n >> 63) if n >= 0 else ((-n) << 1) - 1)


def rec(kind, payload):
    return uv(kind) + uv(len(payload)) + payload


def stack(sid, frames):
    body = sv(0) + uv(sid) + uv(len(frames)) + uv(frames[0])
    body += b"".join(sv(b - a) for a, b in zip(frames, frames[1:]))
    return rec(5, body)


def kernel(kid, name):
    return rec(6, sv(0) + uv(kid) + uv(0x401000 + kid) + uv(len(name)) + name)


def alloc(dt, ptr, size, sid):
    return rec(7, sv(dt) + uv(1) + sv(0) + uv(ptr) + uv(size) + sv(0) + uv(0) + uv(sid) + uv(50))


def free(dt, ptr, sid):
    return rec(8, sv(dt) + uv(10) + sv(0) + uv(ptr) + sv(0) + uv(0) + uv(sid) + uv(20))


def launch(dt, kid, sid):
    return rec(10, sv(dt) + uv(20) + sv(0) + uv(kid) + uv(4) + uv(1) + uv(1) + uv(128) + uv(1) + uv(1)
               + uv(0) + uv(0) + uv(sid) + uv(30))


def ring_bytes(data, tail):
    """A RING-byte ring whose bytes from offset `tail` (mod RING) are data."""
    r = bytearray(RING)
    for i, b in enumerate(data):
        r[(tail + i) % RING] = b
    return bytes(r)


def slot(tid, records, tail=0, pend=None, dropped=(0, 0), base=1_000_000):
    head = tail + len(records)
    pend_seq, pend_tail = pend if pend else (2**64 - 1, 0)
    h = b"ANASLOT1" + struct.pack("<14Q", RING, tid, head, tail, base, 0, 0, pend_seq,
                                  pend_tail, base, 0, 0, dropped[0], dropped[1])
    return h.ljust(4096, b"\0") + ring_bytes(records, tail)


def live(defs, slots, end=(0, b"")):
    defs_off, slots_off = 4096, 4096 + RING
    h = b"ANATLIVE" + struct.pack("<IIQQQQQQQQQQQ", 1, 4096, TRACE_ID, 4242, defs_off, RING,
                                  slots_off, 4096 + RING, len(slots), len(defs), 0, 0, end[0])
    h = (h + end[1] + b"\0").ljust(4096, b"\0")
    return h + ring_bytes(defs, 0) + b"".join(slots)


def main(out):
    os.makedirs(out, exist_ok=True)
    defs = stack(1, [0x401234, 0x401300, 0x7f0000001000]) + kernel(1, b"void touch<float>(float*)")
    work = b"".join(alloc(100 + i, 0x7f0000000000 + 4096 * i, 4096 + i, 1) for i in range(8))
    work += launch(10, 1, 1) + free(5, 0x7f0000000000, 1)
    seeds = {
        "plain": live(defs, [slot(101, work)]),
        "wrapped": live(defs, [slot(101, work, tail=RING - 37)]),
        "pending": live(defs, [slot(101, work, pend=(0, len(work) // 2))]),
        "drops-and-end": live(defs, [slot(101, work, dropped=(7, 350))],
                              end=(2, b"cannot write the trace: No space left on device")),
        "two-slots": live(defs, [slot(101, work), slot(101, work[:40], base=5_000_000)]),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "live"))
