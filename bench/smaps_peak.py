#!/usr/bin/env python3
"""smaps_peak — peak resident memory of a program and where it lies, for bench/memory.sh.

    smaps_peak.py [--interval MS] [--json] [--owners] -- COMMAND [ARG...]

Runs COMMAND (its output goes to /dev/null), reads /proc/PID/smaps every MS milliseconds
(default 10) while it runs, keeps the reading with the largest total Rss, and prints that
reading broken down by kind of mapping, plus the exact peak resident set from the kernel
(ru_maxrss of the child, via /usr/bin/time as its parent: Linux carries a parent's peak RSS
over fork+exec into the child, and Python's would hide small programs). The sampled peak
can miss a short spike, so it may read lower than ru_maxrss; the breakdown is what a
mapping held at the sampled moment.

With --owners the program runs under `strace -f -k -e trace=mmap` and every mapping of the
peak reading is also charged to the code that mapped it: the innermost function outside
libc and the dynamic loader (libc alone: thread stacks). Memory that glibc's malloc mapped
(a thread's arena, a large block) is shown as such with the code whose malloc opened it:
every later malloc of that thread uses it too. Where the kernel merged neighbouring mappings into one, its Rss is shared
out by length. strace slows every mmap; the peak is then read on a slower run.

Kinds (by the mapping's name, else by its size and flags):
  live file       *.anat.live: the preload's rings and definition ring (a shared file mapping)
  preload code    libanatomist.so, libunwind, liblzma, libzstd (text and data)
  cuda libraries  the simulated libcudart, libcuda, libcupti, libcublas, libnccl
  other files     every other file-backed mapping (the program, libc, ...)
  heap            [heap] (malloc: the writer's chunk buffer, zstd's context, the program's)
  stacks          [stack] and anonymous 8 MiB + guard thread stacks
  anon 4 MiB      anonymous mappings of exactly ANATOMIST_CUPTI_BUFFER_KB (4 MiB by default):
                  CUPTI activity buffers
  anon other      every other anonymous mapping (stack/kernel tables, glibc malloc arenas
                  of other threads, the simulator's state)
"""
import json
import os
import sys
import tempfile
import time

PRELOAD_LIBS = ("libanatomist.so", "libunwind", "liblzma", "libzstd")
CUDA_LIBS = ("libcudart", "libcuda.", "libcupti", "libcublas", "libnccl", "libnvToolsExt")


def read_smaps(pid):
    """[(name, size_kib, rss_kib, flags)] of the process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps") as f:
            text = f.read()
    except OSError:
        return None
    maps, cur = [], None
    for line in text.splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            if cur:
                maps.append(cur)
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            cur = [" ".join(head[5:]), (hi - lo) // 1024, 0, head[1], lo, hi]
        elif head and head[0] == "Rss:" and cur:
            cur[2] = int(head[1])
    if cur:
        maps.append(cur)
    return maps


def kind(name, size_kib, flags, cupti_kib):
    if name.endswith(".anat.live") or ".anat.live" in name:
        return "live file"
    if any(p in name for p in PRELOAD_LIBS):
        return "preload code"
    if any(p in name for p in CUDA_LIBS):
        return "cuda libraries"
    if name == "[heap]":
        return "heap"
    if name == "[stack]" or (not name and size_kib in (8188, 8192)):
        return "stacks"
    if name.startswith("/"):
        return "other files"
    if not name and size_kib == cupti_kib:
        return "anon 4 MiB"
    return "anon other"


def parse_owners(path):
    """[(lo, hi, owner)] in call order from an `strace -f -k -e trace=mmap` log."""
    import re
    call = re.compile(r"^(\d+)\s+mmap\((?:NULL|0x[0-9a-f]+), (\d+),")
    done = re.compile(r"^(\d+)\s+(?:mmap\(.*\)|<\.\.\. mmap resumed>.*) = (0x[0-9a-f]+)$")
    pending, out, cur = {}, [], None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith(" > "):
            lib = line[3:].split("(")[0].rsplit("/", 1)[-1]
            fn = re.search(r"\(([^+)]+)\+0x", line)
            fn = fn.group(1) if fn else "?"
            if not cur or cur[2] is not None:
                continue
            if "libc.so" in lib or "ld-linux" in lib:
                cur[3] = cur[3] or fn in ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc")
                continue
            who = ("preload:" if "libanatomist" in lib else lib + ":") + fn
            cur[2] = f"glibc malloc (heap or a thread's arena), opened by {who}" if cur[3] else who
            continue
        if cur:
            out.append((cur[0], cur[1], cur[2] or "libc (thread stacks, malloc arenas)"))
            cur = None
        m = call.match(line)
        if m:
            pending[m.group(1)] = int(m.group(2))
        d = done.match(line)
        if d and d.group(1) in pending:
            lo = int(d.group(2), 16)
            cur = [lo, lo + pending.pop(d.group(1)), None, False]
    if cur:
        out.append((cur[0], cur[1], cur[2] or "libc (thread stacks, malloc arenas)"))
    return out


def charge(best, owners):
    """Rss (KiB) of the reading per owner of its anonymous and live-file mappings."""
    per = {}
    for name, size, rss, flags, lo, hi in best:
        if rss == 0 or (name and ".anat.live" not in name):
            continue
        share, left = {}, [(lo, hi)]
        for olo, ohi, who in reversed(owners):  # the latest mapping of an address owns it
            rest = []
            for a, b in left:
                x, y = max(a, olo), min(b, ohi)
                if x < y:
                    share[who] = share.get(who, 0) + (y - x)
                rest += [iv for iv in ((a, min(b, olo)), (max(a, ohi), b)) if iv[0] < iv[1]]
            left = rest
            if not left:
                break
        total = sum(share.values())
        if not total:
            per["(not seen mapped)"] = per.get("(not seen mapped)", 0) + rss
        for who, n in share.items():
            per[who] = per.get(who, 0) + rss * n / total
    return per


def program_pids(root):
    """Descendants of root other than /usr/bin/time and strace themselves."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo += [int(k) for k in open(f"/proc/{pid}/task/{task}/children").read().split()]
            if pid != root and open(f"/proc/{pid}/comm").read().strip() not in ("time", "strace"):
                out.append(pid)
        except OSError:
            pass
    return out


def main(argv):
    interval, as_json, owners = 0.01, False, False
    while argv and argv[0] != "--":
        if argv[0] == "--owners":
            owners, argv = True, argv[1:]
        elif argv[0] == "--interval" and len(argv) > 1:
            interval = float(argv[1]) / 1000
            argv = argv[2:]
        elif argv[0] == "--json":
            as_json, argv = True, argv[1:]
        else:
            sys.exit(__doc__)
    if len(argv) < 2:
        sys.exit(__doc__)
    cupti_kib = int(os.environ.get("ANATOMIST_CUPTI_BUFFER_KB", "4096"))
    rss_file = tempfile.NamedTemporaryFile(prefix="smaps_peak.", delete=False).name
    devnull = os.open(os.devnull, os.O_WRONLY)
    cmd = argv[1:]
    if owners:
        strace_log = rss_file + ".strace"
        cmd = ["strace", "-f", "-k", "-e", "trace=mmap", "-o", strace_log] + cmd
    timer = os.posix_spawn("/usr/bin/time", ["time", "-f", "%M", "-o", rss_file] + cmd, os.environ,
                           file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    best = None
    while True:
        done, status = os.waitpid(timer, os.WNOHANG)
        if done:
            break
        for pid in program_pids(timer):  # the program (and any process it started)
            maps = read_smaps(pid)
            if maps and (best is None or sum(m[2] for m in maps) > sum(m[2] for m in best)):
                best = maps
        time.sleep(interval)
    peak = int(open(rss_file).read().split()[-1])
    os.unlink(rss_file)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"smaps_peak: {' '.join(argv[1:])} failed (status {status})")
    kinds = {}
    for name, size, rss, flags, _, _ in best or []:
        k = kind(name, size, flags, cupti_kib)
        kinds[k] = kinds.get(k, 0) + rss
    result = {"maxrss_kib": peak, "sampled_kib": sum(kinds.values()), "kinds_kib": kinds}
    if owners:
        result["owners_kib"] = charge(best or [], parse_owners(strace_log))
        os.unlink(strace_log)
    if as_json:
        print(json.dumps(result))
    else:
        print(f"peak RSS {peak / 1024:.1f} MiB (sampled {result['sampled_kib'] / 1024:.1f} MiB)")
        for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print(f"  {k:16s} {v / 1024:8.1f} MiB")
        if owners:
            print("anonymous and live-file memory by the code that mapped it:")
            for k, v in sorted(result["owners_kib"].items(), key=lambda kv: -kv[1]):
                if v >= 64:
                    print(f"  {v / 1024:8.1f} MiB  {k}")


if __name__ == "__main__":
    main(sys.argv[1:])
