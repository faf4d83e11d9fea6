"""Where a model's time goes against onnxruntime: node by node, ocl-infer's kernels next to ORT's.

    build/pyenv/bin/python tools/ort_node_compare.py MODEL.onnx [--rounds 3] [--iterations 20]
        [--ort-threads 2] [--top 25] [-- extra ocl-infer flags]

Both runtimes get the same inputs (seeded random floats, zeros for integer inputs, open
dimensions set to 1 or --dim NAME=N), written as .npy files for ocl-infer. onnxruntime runs with
its profiler on (CPU provider) and keeps, per node, the smallest kernel time over its runs;
ocl-infer runs in R separate processes (`--profile-csv`, compile helpers off) and keeps, per
launch, the smallest device time over the rounds, summed over the launches of a fused node. An ORT
node is matched to the ocl-infer row whose fused node names contain it (ORT fuses too, e.g.
Conv+Relu under the Conv's name); ORT-only nodes (its layout reorders) are listed apart.

Printed: both sums, the rows with the largest difference (ocl-infer us, ORT us, difference, nodes,
kernel), and the sums per ocl-infer kernel. Minima, because whole-run medians on a shared VM move
by 20-30 % between minutes; these repeat within a few percent. Needs numpy and onnxruntime (the
benchmark's venv has both).
"""
import argparse
import collections
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort


def make_feeds(session, dims, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else int(dims.get(str(d), 1)) for d in i.shape]
        if "float16" in i.type:
            feeds[i.name] = rng.random(shape, dtype=np.float32).astype(np.float16)
        elif "float" in i.type:
            feeds[i.name] = rng.random(shape, dtype=np.float32)
        elif "int64" in i.type:
            feeds[i.name] = np.zeros(shape, np.int64)
        elif "int32" in i.type:
            feeds[i.name] = np.zeros(shape, np.int32)
        elif "bool" in i.type:
            feeds[i.name] = np.ones(shape, bool)
        else:
            sys.exit(f"input {i.name}: type {i.type} not handled here")
    return feeds


def ort_node_minima(model, feeds, threads, iterations, workdir):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(workdir, "ort")
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for _ in range(iterations):
        s.run(None, feeds)
    times = collections.defaultdict(list)
    with open(s.end_profiling()) as f:
        for e in json.load(f):
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                times[e["name"][: -len("_kernel_time")]].append(e["dur"])
    return {k: float(min(v)) for k, v in times.items()}


def ocl_launch_minima(binary, model, inputs, rounds, iterations, extra):
    best, nodes, kernel = {}, {}, {}
    env = dict(os.environ, OCL_INFER_COMPILE_HELPERS="0")
    args = [binary, model] + sum([["--input", f"{k}={v}"] for k, v in inputs.items()], [])
    subprocess.run(args + ["--bench", "--iterations", "1"] + extra, env=env, capture_output=True)  # compile
    for _ in range(rounds):
        with tempfile.NamedTemporaryFile(suffix=".csv") as f:
            r = subprocess.run(args + ["--profile-csv", f.name, "--iterations", str(iterations)] + extra, env=env,
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("ocl-infer failed:\n" + r.stderr[-2000:])
            for row in csv.DictReader(open(f.name)):
                i = row["index"]
                best[i] = min(best.get(i, 1e18), float(row["min_us"]))
                nodes[i], kernel[i] = row["nodes"], row["kernel"]
    per_node = collections.defaultdict(float)
    node_kernel = {}  # a fused node's largest launch names it
    for i, us in sorted(best.items(), key=lambda x: -x[1]):
        per_node[nodes[i]] += us
        node_kernel.setdefault(nodes[i], kernel[i])
    return per_node, node_kernel


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--ocl-infer", default="build/ocl-infer")
    ap.add_argument("--rounds", type=int, default=3, help="ocl-infer processes (default 3)")
    ap.add_argument("--iterations", type=int, default=20, help="runs per process and of ORT (default 20)")
    ap.add_argument("--ort-threads", type=int, default=2)
    ap.add_argument("--top", type=int, default=25, help="rows to print (default 25)")
    ap.add_argument("--dim", action="append", default=[], help="NAME=N for an open input dimension")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    dims = dict(d.split("=", 1) for d in a.dim)
    with tempfile.TemporaryDirectory() as work:
        probe = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
        feeds = make_feeds(probe, dims, a.seed)
        inputs = {}
        for name, t in feeds.items():
            path = os.path.join(work, f"in{len(inputs)}.npy")
            np.save(path, t)
            inputs[name] = path
        ort_t = ort_node_minima(a.model, feeds, a.ort_threads, a.iterations, work)
        ours, kernel = ocl_launch_minima(a.ocl_infer, a.model, inputs, a.rounds, a.iterations, extra)

    used = set()
    rows = []
    for nodes, us in ours.items():
        names = nodes.split("+")
        o = 0.0
        for k in ort_t:
            if k not in used and (k in names or any(n and k.startswith(n + "_") for n in names) or k in nodes):
                o += ort_t[k]
                used.add(k)
        rows.append((us - o, us, o, nodes, kernel[nodes]))
    rows.sort(key=lambda r: -r[0])
    print(f"{os.path.basename(a.model)}: sum of per-node minima, ocl-infer {sum(ours.values()) / 1000:.2f} ms, "
          f"onnxruntime {sum(ort_t.values()) / 1000:.2f} ms ({a.ort_threads} threads)")
    print(f"{'ocl-infer us':>12} {'ORT us':>9} {'diff':>9}  nodes (last 50 characters) / kernel")
    for d, us, o, n, k in rows[: a.top]:
        print(f"{us:12.1f} {o:9.1f} {d:+9.1f}  {n[-50:]:50s} {k}")
    by_kernel = collections.defaultdict(lambda: [0.0, 0.0])
    for _, us, o, _, k in rows:
        by_kernel[k][0] += us
        by_kernel[k][1] += o
    print("per ocl-infer kernel (ocl-infer us / matched ORT us):")
    for k, (us, o) in sorted(by_kernel.items(), key=lambda x: -x[1][0]):
        print(f"  {k:45s} {us:10.1f} {o:10.1f}")
    rest = sorted(((v, k) for k, v in ort_t.items() if k not in used), reverse=True)
    if rest:
        print("ORT nodes without an ocl-infer row:", ", ".join(f"{k} {v:.0f}" for v, k in rest[:10]))


if __name__ == "__main__":
    main()
