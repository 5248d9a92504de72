#!/usr/bin/env python3
"""Speed of the analyzer on PyTorch profiler (Kineto) JSON traces: writes a synthetic
trace shaped like a training loop (ProfilerStep ranges, aten ops, autograd nodes on a
second thread, runtime launches, kernels of every class with real-looking names, copies,
[memory] events), then times `anatomist info` and `anatomist report --json` on it, plain
and gzipped, and prints MB/s of JSON and events/s as a markdown table. Run by hand to
fill docs/overhead.md; not a test.

    bench/analyzer_speed.py BUILD_DIR [STEPS] [ROUNDS]      (defaults: 200 steps, 3 rounds)

Each step holds about 1,900 events (≈ 0.55 MB of JSON). The median of ROUNDS runs is
reported, with the peak resident memory of the analyzer (GNU time, /usr/bin/time)."""
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

KERNELS = [
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4>, float*, double, double, double, double, double, bool, bool>(...)",
]
FWD = 120   # kernel launches in the forward pass of a step
BWD = 240   # in the backward pass (autograd thread)
OPT = 16    # optimizer launches


def synth(steps):
    ev, t, corr, ext = [], 1_000_000.0, 1, 1
    main, auto = 100, 101

    def op(name, tid, ts, dur, cat="cpu_op"):
        nonlocal ext
        ext += 1
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": round(ts, 3),
                   "dur": round(dur, 3), "args": {"External id": ext}})
        return ext

    def launch(tid, ts, k, e):
        nonlocal corr
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid,
                   "ts": round(ts, 3), "dur": 3.5, "args": {"External id": e, "cbid": 211, "correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": KERNELS[k], "pid": 0, "tid": 7,
                   "ts": round(ts + 5.0, 3), "dur": 4.125,
                   "args": {"External id": e, "device": 0, "stream": 7, "correlation": corr,
                            "grid": [128, 1, 1], "block": [256, 1, 1]}})
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1,
                   "tid": tid, "ts": round(ts + 1.0, 3),
                   "args": {"Addr": 1 << 30 | (corr % 512) << 12, "Bytes": 4096 if corr % 2 else -4096,
                            "Total Allocated": 1 << 28, "Total Reserved": 1 << 29,
                            "Device Id": 0, "Device Type": 1}})

    for s in range(steps):
        start = t
        for i in range(FWD):
            e = op("aten::addmm" if i % 4 == 0 else "aten::gelu", main, t, 8.0)
            launch(main, t + 1.0, (0, 3, 2, 4)[i % 4], e)
            t += 10.0
        for i in range(BWD):
            e = op("autograd::engine::evaluate_function: AddmmBackward0", auto, t, 8.0)
            launch(auto, t + 1.0, (1, 5, 3, 6)[i % 4], e)
            t += 10.0
        for i in range(OPT):
            e = op("Optimizer.step#AdamW.step", main, t, 8.0, "user_annotation")
            launch(main, t + 1.0, 7, e)
            t += 10.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s, "pid": 1,
                   "tid": main, "ts": round(start, 3), "dur": round(t - start, 3),
                   "args": {"External id": 0}})
        t += 20.0
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
           "totalGlobalMem": 85029158912, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
           "traceEvents": ev}
    return doc, len(ev)


def timed(cmd):
    """Wall seconds and peak RSS in KiB (GNU time's %M: getrusage of this process's
    children would count the pages a child shares with this script at fork)."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("bench/analyzer_speed.py: %s failed: %s" % (" ".join(cmd), r.stderr))
    return dt, int(r.stderr.strip().splitlines()[-1])


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    ana = os.path.join(sys.argv[1], "bin", "anatomist")
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    if not os.access("/usr/bin/time", os.X_OK):
        sys.exit("bench/analyzer_speed.py: needs GNU time for the peak memory (apt-get install time)")
    if not os.access(ana, os.X_OK):
        sys.exit("bench/analyzer_speed.py: %s not found: build the anatomist_cli target" % ana)
    d = tempfile.mkdtemp(prefix="anatomist-bench-")
    doc, n = synth(steps)
    plain = os.path.join(d, "synthetic.pt.trace.json")
    with open(plain, "w") as f:
        json.dump(doc, f)
    del doc
    gz = plain + ".gz"
    with open(plain, "rb") as f, gzip.open(gz, "wb", compresslevel=6) as g:
        g.write(f.read())
    mb = os.path.getsize(plain) / 1e6
    print("machine: %s, %d cores; %d steps, %d events, %.1f MB of JSON (%.1f MB gzipped)\n" %
          (platform.processor() or platform.machine(), os.cpu_count(), steps, n, mb,
           os.path.getsize(gz) / 1e6))
    print("| command | input | median s | MB/s of JSON | events/s | peak RSS MiB |")
    print("|---|---|---:|---:|---:|---:|")
    for cmd in (["info"], ["report", "--json", "--no-symbols"]):
        for path, label in ((plain, "json"), (gz, "json.gz")):
            runs = [timed([ana, *cmd, path]) for _ in range(rounds)]
            dt = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs) / 1024
            print("| %s | %s | %.3f | %.0f | %.0f | %.0f |" % (" ".join(cmd), label, dt, mb / dt, n / dt, rss))
    for f in (plain, gz):
        os.unlink(f)
    os.rmdir(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
