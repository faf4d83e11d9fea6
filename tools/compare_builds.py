#!/usr/bin/env python3
"""Compares two builds of ocl-infer on the same models: outputs bit for bit, and latency side by side.

For refactors that must not change a single output bit or cost speed: keep a copy of the old build
(the `ocl-infer` binary and `libocl_infer.so*` in one folder), rebuild, then

    build/pyenv/bin/python tools/compare_builds.py --old /tmp/old-build [--new build] \\
        [--models resnet18 mobilenet_v2 ...] [--bench --iterations 20 --rounds 3]

For every model NAME in --models-dir (default build/models) it feeds NAME.input.npy (or
NAME.dog.input.npy, else a seeded random tensor) to both builds, writes every output with
--output-dir and compares the files' bytes. With --bench it also runs `--bench --json` on both,
interleaved over R rounds in alternating order so that both see the same machine conditions, and
prints the median latencies and their ratio (new / old). Extra ocl-infer flags go after `--`.
Exits 1 when any output differs.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def binary(folder):
    exe = os.path.join(folder, "ocl-infer")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = folder + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return exe, env


def model_input(models_dir, name):
    for cand in (f"{name}.input.npy", f"{name}.dog.input.npy"):
        path = os.path.join(models_dir, cand)
        if os.path.exists(path):
            return path
    return None


def input_name(exe, env, model):
    graph = subprocess.run([exe, model, "--dump", "graph"], env=env, capture_output=True,
                           text=True, check=True).stdout
    for line in graph.splitlines():
        line = line.strip()
        if line.startswith("input "):
            return line.split()[1].split(":")[0]
    raise RuntimeError("no input found in the graph dump of " + model)


def run_outputs(exe, env, model, feed, out_dir, extra):
    cmd = [exe, model, "--input", feed, "--output-dir", out_dir] + extra
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(" ".join(cmd) + " failed: " + r.stderr.strip().splitlines()[-1])
    return {os.path.basename(p): open(p, "rb").read() for p in glob.glob(os.path.join(out_dir, "*.npy"))}


def bench(exe, env, model, feed, iterations, extra):
    cmd = [exe, model, "--input", feed, "--bench", "--iterations", str(iterations), "--warmup", "3",
           "--json"] + extra
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(" ".join(cmd) + " failed: " + r.stderr.strip())
    return json.loads(r.stdout)["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="folder with the old ocl-infer and libocl_infer.so")
    ap.add_argument("--new", default=os.path.join(REPO_ROOT, "build"))
    ap.add_argument("--models-dir", default=os.path.join(REPO_ROOT, "build", "models"))
    ap.add_argument("--models", nargs="+")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("extra", nargs="*", help="flags for both builds (after --)")
    a = ap.parse_args()

    models = a.models or sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(a.models_dir, "*.onnx")))
    old, new = binary(a.old), binary(a.new)
    differ = 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            model = os.path.join(a.models_dir, name + ".onnx")
            path = model_input(a.models_dir, name)
            iname = input_name(*new, model)
            if path is None:
                path = os.path.join(tmp, name + ".random.npy")
                shape = None
                for line in subprocess.run([new[0], model, "--dump", "graph"], env=new[1], capture_output=True,
                                           text=True).stdout.splitlines():
                    if line.strip().startswith("input "):
                        dims = line.split("[", 1)[1].split("]", 1)[0]
                        shape = [int(d) if d not in ("?", "") else 1 for d in dims.split(",")]
                        break
                np.save(path, np.random.default_rng(0).standard_normal(shape).astype(np.float32))
            feed = f"{iname}={path}"
            outs = []
            for tag, (exe, env) in (("old", old), ("new", new)):
                d = os.path.join(tmp, name + "." + tag)
                os.makedirs(d, exist_ok=True)
                outs.append(run_outputs(exe, env, model, feed, d, a.extra))
            same = outs[0].keys() == outs[1].keys() and all(outs[0][k] == outs[1][k] for k in outs[0])
            differ += not same
            row = {"model": name, "identical": same}
            if a.bench:
                times = {"old": [], "new": []}
                for r in range(a.rounds):
                    order = (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old))
                    for tag, (exe, env) in order:
                        times[tag].append(bench(exe, env, model, feed, a.iterations, a.extra))
                row["old_ms"] = statistics.median(times["old"])
                row["new_ms"] = statistics.median(times["new"])
                row["ratio"] = row["new_ms"] / row["old_ms"]
            rows.append(row)
            msg = f"{name:24s} outputs {'identical' if same else 'DIFFER'}"
            if a.bench:
                msg += f"   old {row['old_ms']:8.2f} ms   new {row['new_ms']:8.2f} ms   new/old {row['ratio']:.3f}"
            print(msg, flush=True)
    if a.bench and rows:
        geo = float(np.exp(np.mean([np.log(r["ratio"]) for r in rows])))
        print(f"geomean new/old: {geo:.3f}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
