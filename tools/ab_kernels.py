"""A/B of two kernel trees, launch by launch, on one model.

    build/pyenv/bin/python tools/ab_kernels.py MODEL.onnx DIR_A DIR_B [--rounds 4] [--iterations 30]

Copies of `kernels/` (DIR_A, DIR_B; one of them may be `kernels` itself) are read at run time
through OCL_INFER_KERNEL_DIR, so no rebuild is needed. The two trees run in alternating processes
(`ocl-infer MODEL --profile-csv`); for every launch the smallest device time over all rounds is
kept, and launches above --min-us are printed with the ratio B/A, then the sums. Whole-model
medians on a shared 2-core VM move by 20-30 % between runs; these per-launch minima repeat to a
few percent, which is what a kernel change of 2-10 % needs. Each tree first runs once unmeasured
(its new programs compile then), and compile helpers are off (OCL_INFER_COMPILE_HELPERS=0): a
helper still compiling one tree's kernels in the background slowed the other tree's rounds by up
to 15 % and made unchanged kernels look faster in the tree measured second. Needs no Python
packages.
"""
import argparse
import collections
import csv
import os
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def profile(binary, model, kernel_dir, iterations, extra):
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        env = dict(os.environ, OCL_INFER_KERNEL_DIR=kernel_dir, OCL_INFER_COMPILE_HELPERS="0")
        r = subprocess.run([binary, model, "--profile-csv", f.name, "--iterations", str(iterations)] + extra,
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ab_kernels: {binary} failed with {kernel_dir}:\n{r.stderr.strip()}")
        with open(f.name, newline="") as fh:
            return list(csv.DictReader(fh))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("dir_a")
    p.add_argument("dir_b")
    p.add_argument("--rounds", type=int, default=4, help="processes per tree, alternating (default 4)")
    p.add_argument("--iterations", type=int, default=30, help="profiled runs per process (default 30)")
    p.add_argument("--min-us", type=float, default=30, help="print launches slower than this (default 30)")
    p.add_argument("--ocl-infer", default=os.path.join(REPO_ROOT, "build", "ocl-infer"))
    p.add_argument("extra", nargs="*", help="further ocl-infer options, after --")
    a = p.parse_args()
    for d in (a.dir_a, a.dir_b):
        if not os.path.isfile(os.path.join(d, "conv.cl")):
            sys.exit(f"ab_kernels: {d} does not look like a kernels/ tree (no conv.cl)")
    dirs = [a.dir_a, a.dir_b]
    best = {d: collections.defaultdict(lambda: float("inf")) for d in dirs}
    totals = {d: float("inf") for d in dirs}
    names = {}
    for d in dirs:  # warm-up: compiles what the tree needs, not measured
        profile(a.ocl_infer, a.model, d, 1, a.extra)
    for r in range(a.rounds):
        for d in dirs:
            total = 0.0
            for row in profile(a.ocl_infer, a.model, d, a.iterations, a.extra):
                key = int(row["index"])
                names[key] = (row["nodes"], row["variant"])
                best[d][key] = min(best[d][key], float(row["min_us"]))
                total += float(row["min_us"])
            totals[d] = min(totals[d], total)
        print(f"ab_kernels: round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"{'#':>4}  {'node':44} {'variant':44} {'A us':>9} {'B us':>9} {'B/A':>6}")
    for key in sorted(names):
        ua, ub = best[a.dir_a][key], best[a.dir_b][key]
        if max(ua, ub) < a.min_us:
            continue
        node, variant = names[key]
        print(f"{key:4d}  {node[:44]:44} {variant[:44]:44} {ua:9.1f} {ub:9.1f} {ub / ua:6.3f}")
    ta, tb = totals[a.dir_a], totals[a.dir_b]
    print(f"sum of the launches' minima (best process): A {ta:.1f} us, B {tb:.1f} us, B/A {tb / ta:.3f}")


if __name__ == "__main__":
    main()
