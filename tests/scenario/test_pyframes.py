"""Python frames in stacks (docs/trace-format.md "Python frames").

py/pyframes_probe.py allocates device memory through ctypes from nested functions, methods,
a generator, a comprehension, a thread, a frame an exception unwinds through and an except
block, and (through a C extension module built here with nvcc) allocates and launches a
kernel. Each site has its own allocation size and its lines carry `# @tag` comments; this
test reads the tags from the source, so the lines it expects come from the program, not
from the profiler. Every CPython 3.9-3.13 installed here runs the probe (python3 at least);
an interpreter the preload does not support (3.8, when installed) must be said once and
leave native stacks; ANATOMIST_PYTHON=0 leaves Python out."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import ANATOMIST, PRELOAD, SANITIZER_RUNTIME, SIM_LIB, CUDA_HOME, anatomist, clean_env as _clean_env, run, tmpdir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "py", "pyframes_probe.py")
EXT = os.path.join(HERE, "py", "anaprobe_ext.cu")
SOURCE = os.environ.get("ANA_SOURCE") or os.path.join(HERE, "..", "..")
KiB = 1024


def clean_env(**extra):
    """common.clean_env; in a sanitizer build the interpreter's own leaks at exit (CPython
    does not free everything) are not the profiler's: leak checking is off for these
    processes (the preload's leaks are checked by the tests of C programs)."""
    env = _clean_env(**extra)
    if SANITIZER_RUNTIME:
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def tags():
    out = {}
    with open(PROBE) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# @(\w+)\s*$", line)
            if m:
                out[m.group(1)] = n
    return out


T = tags()


def interpreters():
    """(version tuple, path) of each distinct CPython found: python3 first."""
    found, seen = [], set()
    cands = [sys.executable] + sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")) + \
        sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    for py in cands:
        r = run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        if r.returncode != 0:
            continue
        v = tuple(int(x) for x in r.stdout.split("."))
        if v not in seen:
            seen.add(v)
            found.append((v, py))
    return found


def expected(v):
    """tag of the allocation's site -> the Python frames its stack must start with, innermost
    first, as (function, tag of the line); qualified names from 3.11 (co_qualname), plain
    names before; a comprehension is a frame of its own before 3.12 (PEP 709)."""
    q = (lambda s: s) if v >= (3, 11) else (lambda s: s.split(".")[-1])
    comp = [(q("comprehension.<locals>.<listcomp>"), "comprehension")] if v < (3, 12) else []
    tail = [("<module>", "module")]
    return {
        101 * KiB: [("cuda_alloc", "cuda_alloc"), (q("outer.<locals>.inner"), "inner"), ("outer", "outer"),
                    ("main", "main_outer")] + tail,
        102 * KiB: [("cuda_alloc", "cuda_alloc"), (q("Model.make_weight"), "method"), (q("Model.build"), "classmethod"),
                    ("main", "main_method")] + tail,
        103 * KiB: [("cuda_alloc", "cuda_alloc"), ("gen", "generator"), ("consume", "consume"), ("main", "main_gen")] + tail,
        104 * KiB: [("cuda_alloc", "cuda_alloc")] + comp + [("comprehension", "comprehension"), ("main", "main_comp")] + tail,
        105 * KiB: [("cuda_alloc", "cuda_alloc"), ("worker", "thread")],
        106 * KiB: [("cuda_alloc", "cuda_alloc"), ("unwinding", "finally"), ("catcher", "unwinding"),
                    ("main", "main_catch")] + tail,
        107 * KiB: [("cuda_alloc", "cuda_alloc"), ("catcher", "except"), ("main", "main_catch")] + tail,
    }


def profile(py, out, extra_env=None, args=(), pythonpath=None, kept=9):
    env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=out, **(extra_env or {}))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    r = subprocess.run([py, PROBE, *args], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "probe done %d" % kept, r.stdout
    return r


def allocations(trace):
    r = anatomist("report", trace, "--json", "--top", "100")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["memory"]["at_peak_allocations"]


def python_frames(stack):
    return [(f["function"], os.path.basename(f["file"] or ""), f["line"]) for f in stack if f["language"] == "python"]


def check_sites(v, trace):
    allocs = allocations(trace)
    by_size = {}
    for a in allocs:
        by_size.setdefault(a["bytes"], []).append(a)
    for size, want in expected(v).items():
        got = by_size.get(size)
        assert got, "%s: no allocation of %d bytes in the report" % (v, size)
        for a in got:
            frames = python_frames(a["stack"])
            exp = [(fn, "pyframes_probe.py", T[tag]) for fn, tag in want]
            assert frames[:len(exp)] == exp, "%s, %d bytes:\n got %s\nwant %s" % (v, size, frames, exp)
            if size != 105 * KiB:
                assert len(frames) == len(exp), (v, size, frames)
            # no interpreter frame is left between Python frames, and ctypes' own call
            # machinery (native, outside the interpreter) stays innermost
            names = [f["function"] for f in a["stack"]]
            assert "_PyEval_EvalFrameDefault" not in names, (v, names)
            first_py = next(i for i, f in enumerate(a["stack"]) if f["language"] == "python")
            assert all(f["language"] == "native" for f in a["stack"][:first_py])
    # the thread's stack leads into threading's own frames, never into main
    thread = python_frames(by_size[105 * KiB][0]["stack"])
    assert any(f[1] == "threading.py" for f in thread[2:]), thread
    assert not any(f[0] == "main" for f in thread), thread


def build_ext(py, where):
    inc = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"]).stdout.strip()
    suffix = run([py, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"]).stdout.strip()
    cands = [os.path.join(h, "bin", "nvcc") for h in (CUDA_HOME, os.environ.get("CUDA_PATH", ""), "/usr/local/cuda") if h]
    nvcc = next((c for c in cands if os.access(c, os.X_OK)), None) or shutil.which("nvcc")
    assert nvcc, "no nvcc (looked at %s and PATH)" % cands
    r = run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-arch=sm_80", "-g", "-I" + inc,
             "-o", os.path.join(where, "anaprobe_ext" + suffix), EXT], timeout=300)
    assert r.returncode == 0, r.stderr


def test_layouts_match_the_headers():
    """The offsets the preload reads are the ones each installed version's headers give."""
    r = run([os.path.join(SOURCE, "scripts", "pylayouts"), "--check"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "same:" in r.stdout


def test_every_site_on_every_interpreter():
    vers = [(v, py) for v, py in interpreters() if (3, 9) <= v <= (3, 13)]
    assert vers, "no CPython 3.9-3.13 here"
    d = tmpdir()
    for v, py in vers:
        trace = os.path.join(d, "py%d%d.anat" % v)
        r = profile(py, trace)
        assert "Python frames are off" not in r.stderr, r.stderr
        check_sites(v, trace)
    print("checked", ", ".join("%d.%d" % v for v, _ in vers))


def test_c_extension_allocates_and_launches():
    d = tmpdir()
    v = sys.version_info[:2]
    build_ext(sys.executable, d)
    trace = os.path.join(d, "ext.anat")
    profile(sys.executable, trace, args=("ext",), pythonpath=d)
    check_sites(v, trace)
    # the extension's allocation: its C function, then the Python caller with its line
    a = [a for a in allocations(trace) if a["bytes"] == 108 * KiB]
    assert len(a) == 1, a
    st = a[0]["stack"]
    names = [f["function"] for f in st]
    i = names.index("anaprobe_alloc_and_launch")
    py = [(f["function"], f["line"]) for f in st[i + 1:] if f["language"] == "python"]
    assert py[:3] == [("cext", T["cext"]), ("main", T["main_cext"]), ("<module>", T["module"])], py
    assert all(f["language"] == "python" or f["module"] is None or "libpython" not in f["module"]
               for f in st), "an interpreter frame was left in the stack"
    # the launch: in the GPU-time flame graph the kernel sits on the same Python frames
    r = anatomist("flame", trace, "--metric", "gpu-time")
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stdout.splitlines() if "anaprobe_fill" in l]
    assert line, r.stdout
    frames = line[0].rsplit(" ", 1)[0].split(";")
    want = ["<module> (pyframes_probe.py:%d)" % T["module"], "main (pyframes_probe.py:%d)" % T["main_cext"],
            "cext (pyframes_probe.py:%d)" % T["cext"], "anaprobe_alloc_and_launch"]
    k = frames.index(want[0])
    assert frames[k:k + 4] == want, frames
    # the Chrome trace names each event's stack (stackFrames, "sf"): the launch's leads from
    # the extension's C function to the Python caller's line
    out = os.path.join(d, "ext.json")
    r = anatomist("export", trace, "-o", out)
    assert r.returncode == 0, r.stderr
    doc = json.load(open(out))
    sf = doc["stackFrames"]
    launches = [e for e in doc["traceEvents"] if e.get("cat") == "api" and e.get("args", {}).get("kernel") and "sf" in e]
    assert launches, [e for e in doc["traceEvents"] if e.get("cat") == "api"][:3]
    chain, k = [], str(launches[0]["sf"])
    while k:
        chain.append(sf[k]["name"])
        k = sf[k].get("parent")
    i = chain.index("anaprobe_alloc_and_launch")
    assert chain[i + 1:i + 4] == ["cext (pyframes_probe.py:%d)" % T["cext"], "main (pyframes_probe.py:%d)" % T["main_cext"],
                                  "<module> (pyframes_probe.py:%d)" % T["module"]], chain
    assert sf[str(launches[0]["sf"])]["category"] != "python"
    assert all(sf[x]["category"] == "python" for x in sf if sf[x]["name"].startswith("cext ("))
    # Python frames are coloured apart in the SVG
    svg = os.path.join(d, "f.svg")
    r = anatomist("flame", trace, "--metric", "alloc-bytes", "-o", svg)
    assert r.returncode == 0, r.stderr
    text = open(svg).read()
    m = re.search(r'fill="rgb\((\d+),(\d+),(\d+)\)"[^>]*/><text[^>]*>cext \(pyframes_probe', text) or \
        re.search(r'<title>cext \(pyframes_probe.py:%d\)[^<]*</title><rect[^>]*fill="rgb\((\d+),(\d+),(\d+)\)"' % T["cext"], text)
    if m:
        r_, g_, b_ = (int(x) for x in m.groups())
        assert b_ > r_, "a Python frame is drawn in a native frame's warm colour"


def test_text_report_and_diff_name_python_sites():
    d = tmpdir()
    trace = os.path.join(d, "t.anat")
    profile(sys.executable, trace)
    r = anatomist("report", trace)
    assert r.returncode == 0, r.stderr
    assert re.search(r"#\d+ Model\.make_weight at %s:%d \[python\]" % (re.escape(PROBE), T["method"]), r.stdout), r.stdout
    # diff names sites by their Python frames: the head run builds the model twice, and the
    # site that grew is named by the functions that allocated
    head = os.path.join(d, "head.anat")
    profile(sys.executable, head, extra_env={"ANAPROBE_TWICE": "1"}, kept=10)
    r = anatomist("diff", trace, head, "--format", "json")
    assert r.returncode == 0, r.stderr
    grew = "pyframes_probe.py:main > pyframes_probe.py:Model.build > pyframes_probe.py:Model.make_weight > " \
           "pyframes_probe.py:cuda_alloc > "
    sites = [x for x in json.loads(r.stdout)["alloc_sites"] if x["site"].startswith(grew)]
    assert len(sites) == 1, r.stdout[:3000]
    assert (sites[0]["base"], sites[0]["head"], sites[0]["base_count"], sites[0]["head_count"]) == \
        (102 * KiB, 2 * 102 * KiB, 1, 2), sites[0]


def test_oom_stack_leads_with_python():
    """`anatomist oom` on a Python program that runs the device out of memory: the failed
    allocation's stack shows the Python frames right after the innermost native frame."""
    d = tmpdir()
    prog = os.path.join(d, "grow.py")
    with open(prog, "w") as f:
        f.write("import ctypes\n"
                "rt = ctypes.CDLL('libcudart.so.13')\n"
                "def grow(keep):\n"
                "    while True:\n"
                "        p = ctypes.c_void_p()\n"
                "        if rt.cudaMalloc(ctypes.byref(p), 256 << 20) != 0:\n"   # line 6
                "            return len(keep)\n"
                "        keep.append(p)\n"
                "print(grow([]))\n")                                              # line 9
    trace = os.path.join(d, "oom.anat")
    r = run([ANATOMIST, "run", "--sim", "--sim-memory", "1GiB", "-o", trace, "--", sys.executable, prog],
            env=clean_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "4", r.stdout
    r = anatomist("oom", trace)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, l in enumerate(lines) if "call stack of the failed allocation" in l)
    head = [l.strip() for l in lines[at + 1:at + 5]]
    assert head[0].startswith("#0 "), head
    assert head[1].startswith("... ") and "native frames" in head[1], head
    assert head[2] == "#1 grow at %s:6 [python]" % prog, head
    assert head[3] == "#2 <module> at %s:9 [python]" % prog, head


def test_python_file_names_are_escaped_in_text():
    """A Python file name is a name the program chose: text outputs write its control bytes
    as \\xNN (util.h ana_name_dup), the JSON keeps its exact bytes."""
    d = os.path.join(tmpdir(), "evil\x1b[31m")
    os.mkdir(d)
    prog = os.path.join(d, "p.py")
    with open(prog, "w") as f:
        f.write("import ctypes\nrt = ctypes.CDLL('libcudart.so.13')\np = ctypes.c_void_p()\n"
                "rt.cudaMalloc(ctypes.byref(p), 4096)\n")                   # line 4
    trace = os.path.join(d, "..", "t.anat")
    env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace)
    r = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = anatomist("report", trace)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout
    assert "#1 <module> at %s:4 [python]" % prog.replace("\x1b", "\\x1b") in r.stdout, r.stdout
    a = allocations(trace)
    assert [f["file"] for f in a[0]["stack"] if f["language"] == "python"] == [prog]


def test_killed_process_keeps_python_frames():
    """A Python process killed by SIGKILL: `anatomist run` recovers its trace from the live
    file, and the allocation's stack still shows its Python frames (PYCODE definitions in
    the live file's definitions ring)."""
    d = tmpdir()
    prog = os.path.join(d, "killed.py")
    with open(prog, "w") as f:
        f.write("import ctypes, os, signal\n"
                "rt = ctypes.CDLL('libcudart.so.13')\n"
                "def alloc(n):\n"
                "    p = ctypes.c_void_p()\n"
                "    rt.cudaMalloc(ctypes.byref(p), n)\n"          # line 5
                "def main():\n"
                "    alloc(3 << 20)\n"                             # line 7
                "    os.kill(os.getpid(), signal.SIGKILL)\n"
                "main()\n")                                        # line 9
    trace = os.path.join(d, "k.anat")
    env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace)
    r = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == -9, (r.returncode, r.stderr)
    r = anatomist("recover", trace)
    assert r.returncode == 0, r.stderr
    a = [a for a in allocations(trace) if a["bytes"] == 3 << 20]
    assert len(a) == 1, a
    assert python_frames(a[0]["stack"]) == [("alloc", "killed.py", 5), ("main", "killed.py", 7),
                                            ("<module>", "killed.py", 9)], a[0]["stack"]


def test_python_off_and_unsupported_interpreters():
    d = tmpdir()
    trace = os.path.join(d, "off.anat")
    profile(sys.executable, trace, extra_env={"ANATOMIST_PYTHON": "0"})
    for a in allocations(trace):
        assert not python_frames(a["stack"]), a["stack"]
    old = [(v, py) for v, py in interpreters() if v < (3, 9)]
    for v, py in old:
        trace = os.path.join(d, "old%d%d.anat" % v)
        r = profile(py, trace)
        said = [l for l in r.stderr.splitlines() if "Python frames are off" in l]
        assert len(said) == 1 and "is not supported" in said[0], r.stderr
        allocs = allocations(trace)
        assert len(allocs) == 9 and all(not python_frames(a["stack"]) and a["stack"] for a in allocs)


def test_bench_runs():
    """bench/pyframes.py (docs/overhead.md) still runs: one short round, no timing asserted
    (not in a sanitizer build: the bench preloads the profiler alone)."""
    from common import BUILD
    if SANITIZER_RUNTIME:
        print("skipped in a sanitizer build")
        return
    r = run([sys.executable, os.path.join(SOURCE, "bench", "pyframes.py"), BUILD, "1", "20", "2000"], timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [l for l in r.stdout.splitlines() if l.startswith("| ") and l.split("|")[2].strip().isdigit()]
    assert len(rows) == 3, r.stdout
    assert "Python frames add" in r.stdout, r.stdout


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
