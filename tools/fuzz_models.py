#!/usr/bin/env python3
"""Runs mutated ONNX models through the ocl-infer CLI and sorts every outcome.

    build/pyenv/bin/python tools/fuzz_models.py --cli build-asan/ocl-infer --count 2000 \\
        [--jobs 2] [--seed 1] [--timeout 60] [--keep DIR] [--corpus tests/fuzz_corpus] [MODEL.onnx ...]

Seeds: small models made here (a conv net, shape arithmetic, data movement with many operands,
Resize/Pad/Gather; --write-seeds DIR writes them) plus any models given; external data comes from
the mutations. Each mutant gets one
mutation: byte flips, truncation, or a structural change made through the ONNX protobuf --
initializer dims, dtypes and raw-data lengths, attributes set to extremes, cycles, dangling
references, opset versions, external data pointing outside the model folder, through a symbolic
link, at a FIFO, or with absurd offsets/lengths, absurd input shapes, Resize to huge sizes.

Every mutant runs as `CLI MODEL --dump plan` (plans and runs once with random inputs) with a
timeout. An outcome is fine when the CLI exits 0, or 1/2 with a one-line error and no sanitizer
report; anything else -- a signal, another exit status, an "AddressSanitizer" or "runtime error"
report, more than one line on stderr for an error, a timeout -- is a bug, kept in --keep (and
copied into --corpus when given, for tests/fuzz_corpus). Prints a summary; exit 1 when any bug.
"""

import argparse
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


# ---- seeds -----------------------------------------------------------------------------------

def model(nodes, inputs, outputs, inits, opset=13, name="seed"):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def seeds(rng):
    r = np.random.default_rng(0)
    t = lambda a, n: numpy_helper.from_array(np.asarray(a), n)
    out = {}
    out["convnet"] = model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
         helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"]),
         helper.make_node("Relu", ["n"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "fc", "fb"], ["l"], transB=1),
         helper.make_node("Softmax", ["l"], ["y"], axis=1)],
        [f32("x", [1, 3, 8, 8])], [f32("y", None)],
        [t(r.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"), t(np.zeros(4, np.float32), "b"),
         t(np.ones(4, np.float32), "g"), t(np.zeros(4, np.float32), "be"), t(np.zeros(4, np.float32), "mu"),
         t(np.ones(4, np.float32), "var"), t(r.standard_normal((5, 64)).astype(np.float32), "fc"),
         t(np.zeros(5, np.float32), "fb")])
    out["shapes"] = model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
         helper.make_node("Range", ["zero", "d0", "one"], ["rg"]),
         helper.make_node("ConstantOfShape", ["s"], ["z"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
         helper.make_node("Add", ["x", "z"], ["a"]),
         helper.make_node("Reshape", ["a", "newshape"], ["y"]),
         helper.make_node("Cast", ["rg"], ["y2"], to=TensorProto.FLOAT)],
        [f32("x", [2, 3, 4])], [f32("y", None), f32("y2", None)],
        [t(np.array(0, np.int64), "i0"), t(np.array(0, np.int64), "zero"), t(np.array(1, np.int64), "one"),
         t(np.array([6, 4], np.int64), "newshape")])
    parts = [f"s{i}" for i in range(12)]
    out["movement"] = model(
        [helper.make_node("Split", ["x"], parts, axis=1),
         helper.make_node("Concat", parts[::-1], ["c"], axis=1),
         helper.make_node("Transpose", ["c"], ["tr"], perm=[0, 2, 1]),
         helper.make_node("Slice", ["tr", "st", "en", "ax"], ["sl"]),
         helper.make_node("Squeeze", ["sl", "sqa"], ["sq"]),
         helper.make_node("Tile", ["sq", "reps"], ["y"])],
        [f32("x", [1, 12, 5])], [f32("y", None)],
        [t(np.array([1], np.int64), "st"), t(np.array([3], np.int64), "en"), t(np.array([1], np.int64), "ax"),
         t(np.array([0], np.int64), "sqa"), t(np.array([2, 1], np.int64), "reps")])
    out["resize_pad_gather"] = model(
        [helper.make_node("Resize", ["x", "", "scales"], ["rs"], mode="linear"),
         helper.make_node("Pad", ["rs", "pads"], ["pd"], mode="reflect"),
         helper.make_node("Gather", ["pd", "idx"], ["y"], axis=3)],
        [f32("x", [1, 2, 4, 4])], [f32("y", None)],
        [t(np.array([1, 1, 2, 2], np.float32), "scales"), t(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
         t(np.array([0, 3, 5], np.int64), "idx")], opset=13)
    # Control flow: an If on a condition computed on the device (a plan segment boundary) whose
    # branches read outer values, and a Loop with a carried value, a scan output and a nested If.
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t_y"])], "then", [], [f32("t_y", [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_y"])], "else", [], [f32("e_y", [2, 3])])
    inner_then = helper.make_graph([helper.make_node("Add", ["v_in", "two"], ["it_v"])], "it", [], [f32("it_v", [2, 3])])
    inner_else = helper.make_graph([helper.make_node("Sub", ["v_in", "two"], ["ie_v"])], "ie", [], [f32("ie_v", [2, 3])])
    body = helper.make_graph(
        [helper.make_node("Mod", ["i", "two_i"], ["par"]),
         helper.make_node("Equal", ["par", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["v_out"], then_branch=inner_then, else_branch=inner_else),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Relu", ["v_out"], ["scan"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), f32("v_in", [2, 3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f32("v_out", [2, 3]), f32("scan", [2, 3])])
    out["control_flow"] = model(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zerof"], ["cond"]),
         helper.make_node("If", ["cond"], ["b"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Loop", ["trips", "", "b"], ["y", "ys"], body=body)],
        [f32("x", [2, 3])], [f32("y", None), f32("ys", None)],
        [t(np.array(2, np.float32), "two"), t(np.array(0, np.float32), "zerof"), t(np.array(3, np.int64), "trips"),
         t(np.array(2, np.int64), "two_i"), t(np.array(0, np.int64), "zero")], opset=13)
    # Recurrent layers and sequences: a bidirectional LSTM with sequence_lens and initial states,
    # a GRU on its output, the result split into a sequence, edited and concatenated again.
    H = 4
    out["recurrent"] = model(
        [helper.make_node("LSTM", ["x", "lw", "lr", "lb", "lens", "h0", "c0"], ["ly", "lh", "lc"], hidden_size=H,
                          direction="bidirectional"),
         helper.make_node("Reshape", ["ly", "flat"], ["g_in"]),
         helper.make_node("GRU", ["g_in", "gw", "gr", "gb"], ["gy", "gh"], hidden_size=H, linear_before_reset=1),
         helper.make_node("SplitToSequence", ["gy", "one"], ["seq"], axis=0),
         helper.make_node("SequenceErase", ["seq", "zero"], ["seq2"]),
         helper.make_node("Unsqueeze", ["gh", "zeros1"], ["gh4"]),
         helper.make_node("SequenceInsert", ["seq2", "gh4"], ["seq3"]),
         helper.make_node("ConcatFromSequence", ["seq3"], ["y"], axis=0),
         helper.make_node("SequenceLength", ["seq3"], ["n"])],
        [f32("x", [5, 2, 3]), helper.make_tensor_value_info("lens", TensorProto.INT32, [2]),
         f32("h0", [2, 2, H]), f32("c0", [2, 2, H])],
        [f32("y", None), helper.make_tensor_value_info("n", TensorProto.INT64, None), f32("lc", None)],
        [t(r.standard_normal((2, 4 * H, 3)).astype(np.float32), "lw"),
         t(r.standard_normal((2, 4 * H, H)).astype(np.float32), "lr"),
         t(r.standard_normal((2, 8 * H)).astype(np.float32), "lb"),
         t(np.array([5, 2, 2 * H], np.int64), "flat"),
         t(r.standard_normal((1, 3 * H, 2 * H)).astype(np.float32), "gw"),
         t(r.standard_normal((1, 3 * H, H)).astype(np.float32), "gr"),
         t(r.standard_normal((1, 6 * H)).astype(np.float32), "gb"),
         t(np.array(1, np.int64), "one"), t(np.array(0, np.int64), "zero"), t(np.array([0], np.int64), "zeros1")],
        opset=14)
    return out


# ---- mutations --------------------------------------------------------------------------------

EXTREMES = [0, -1, 1, 2**31, 2**31 - 1, 2**40, 2**62, -2**62, 2**63 - 1, -2**63, 10**9]


def byte_flip(data, rng):
    b = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(data, rng):
    return data[:rng.randrange(len(data))]


def structural(m, rng, workdir):
    """Mutates the ModelProto in place; may write side files into workdir. Returns a label."""
    g = m.graph
    kind = rng.choice(["dims", "dtype", "raw", "attr", "cycle", "dangling", "opset", "external", "input_shape",
                       "optype", "output", "resize", "duplicate"])
    if kind == "dims" and g.initializer:
        init = rng.choice(g.initializer)
        if init.dims:
            init.dims[rng.randrange(len(init.dims))] = rng.choice(EXTREMES)
        else:
            init.dims.append(rng.choice(EXTREMES))
    elif kind == "dtype":
        types = [0, 2, 3, 7, 8, 9, 10, 11, 16, 99]
        if g.initializer and rng.random() < 0.5:
            rng.choice(g.initializer).data_type = rng.choice(types)
        elif g.input:
            rng.choice(g.input).type.tensor_type.elem_type = rng.choice(types)
    elif kind == "raw" and g.initializer:
        init = rng.choice(g.initializer)
        raw = init.raw_data
        init.raw_data = raw[:rng.randrange(len(raw) + 1)] if rng.random() < 0.5 else raw + bytes(rng.randrange(1, 64))
    elif kind == "attr" and g.node:
        n = rng.choice(g.node)
        if n.attribute:
            a = rng.choice(n.attribute)
            if a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(EXTREMES)
            elif a.type == onnx.AttributeProto.INTS:
                if a.ints and rng.random() < 0.7:
                    a.ints[rng.randrange(len(a.ints))] = rng.choice(EXTREMES)
                else:
                    del a.ints[:]
                    a.ints.extend(rng.choice(EXTREMES) for _ in range(rng.randrange(0, 9)))
            elif a.type == onnx.AttributeProto.FLOAT:
                a.f = rng.choice([float("nan"), float("inf"), -1e38, 0.0])
            else:
                a.type = rng.choice([1, 2, 3, 4, 6, 7, 8])
        else:
            n.attribute.append(helper.make_attribute(rng.choice(["axis", "kernel_shape", "perm", "to"]),
                                                     rng.choice(EXTREMES)))
    elif kind == "cycle" and len(g.node) > 1:
        a, b = sorted(rng.sample(range(len(g.node)), 2))
        if g.node[a].input and g.node[b].output:
            g.node[a].input[rng.randrange(len(g.node[a].input))] = g.node[b].output[0]
    elif kind == "dangling" and g.node:
        n = rng.choice(g.node)
        n.input.append("does_not_exist")
    elif kind == "opset":
        m.opset_import[0].version = rng.choice([0, 1, 6, 18, 99, 2**40, -3])
    elif kind == "external" and g.initializer:
        init = rng.choice(g.initializer)
        how = rng.choice(["outside", "absolute", "symlink", "fifo", "offset", "length", "garbage", "ok"])
        data = init.raw_data or b"\0" * 16
        init.ClearField("raw_data")
        init.data_location = TensorProto.EXTERNAL
        loc, extra = "weights.bin", {}
        if how == "outside":
            loc = "../../../../etc/passwd"
        elif how == "absolute":
            loc = "/etc/passwd"
        elif how == "symlink":
            os.symlink("/etc/passwd", os.path.join(workdir, "link.bin"))
            loc = "link.bin"
        elif how == "fifo":
            os.mkfifo(os.path.join(workdir, "fifo.bin"))
            loc = "fifo.bin"
        else:
            with open(os.path.join(workdir, "weights.bin"), "wb") as f:
                f.write(data)
            if how == "offset":
                extra["offset"] = str(rng.choice([2**62, 10**18, len(data) + 1]))
            elif how == "length":
                extra["length"] = str(rng.choice([2**62, len(data) * 1000, 0]))
            elif how == "garbage":
                extra["offset"] = rng.choice(["-5", "abc", "", "1e9", "99999999999999999999999"])
        del init.external_data[:]
        init.external_data.add(key="location", value=loc)
        for k, v in extra.items():
            init.external_data.add(key=k, value=v)
        kind += ":" + how
    elif kind == "input_shape" and g.input:
        dims = g.input[0].type.tensor_type.shape.dim
        if dims:
            dims[rng.randrange(len(dims))].dim_value = rng.choice([2**40, 2**31, 0, 2**20])
    elif kind == "optype" and g.node:
        rng.choice(g.node).op_type = rng.choice(["Conv", "Resize", "Gather", "Split", "Concat", "Reshape",
                                                 "NoSuchOp", "Loop", "Range", "Expand", "Tile", "Pad"])
    elif kind == "output":
        g.output[0].name = rng.choice(["", "nothing_makes_this", g.node[0].output[0] if g.node else "x"])
    elif kind == "resize":
        g.node.append(helper.make_node("Resize", [g.input[0].name, "", "", "rsz"], ["rsy"], mode="nearest"))
        rank = len(g.input[0].type.tensor_type.shape.dim)
        sizes = [1] * rank
        sizes[-1] = rng.choice([2**31, 2**30, 2**20])
        g.initializer.append(numpy_helper.from_array(np.array(sizes, np.int64), "rsz"))
        g.output.append(helper.make_tensor_value_info("rsy", TensorProto.FLOAT, None))
    elif kind == "duplicate" and g.node:
        g.node.append(g.node[rng.randrange(len(g.node))])
    return kind


def make_mutant(seed_bytes, rng, workdir):
    r = rng.random()
    if r < 0.3:
        return byte_flip(seed_bytes, rng), "byteflip"
    if r < 0.4:
        return truncate(seed_bytes, rng), "truncate"
    m = onnx.ModelProto()
    m.ParseFromString(seed_bytes)
    label = structural(m, rng, workdir)
    return m.SerializeToString(), label


# ---- running ----------------------------------------------------------------------------------

def run_one(cli, path, timeout, env):
    t0 = time.time()
    try:
        p = subprocess.run([cli, path, "--dump", "plan"], capture_output=True, text=True, errors="replace",
                           timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "hang", f"no result after {timeout} s", time.time() - t0
    err = p.stderr
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("ocl-infer: device:")]
    if "AddressSanitizer" in err or "runtime error:" in err or "LeakSanitizer" in err or "ThreadSanitizer" in err:
        return "sanitizer", err[-2000:], time.time() - t0
    if p.returncode == 0:
        return "ok", "", time.time() - t0
    if p.returncode in (1, 2) and 1 <= len(lines) <= 2 and lines[0].startswith("ocl-infer:"):
        return "error", lines[0], time.time() - t0
    return "crash", f"exit {p.returncode}: {err[-2000:]}", time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--keep", help="folder for the models that found bugs")
    ap.add_argument("--corpus", help="also copy bug models (single-file ones) here")
    ap.add_argument("--show-errors", type=int, default=0, metavar="N",
                    help="also print the N most common error messages (their first words)")
    ap.add_argument("--write-seeds", metavar="DIR", help="only write the seed models to DIR and exit")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()

    rng = random.Random(a.seed)
    base = {k: v.SerializeToString() for k, v in seeds(rng).items()}
    if a.write_seeds:
        os.makedirs(a.write_seeds, exist_ok=True)
        for k, v in base.items():
            with open(os.path.join(a.write_seeds, f"seed-{k}.onnx"), "wb") as f:
                f.write(v)
        return
    if not a.cli:
        ap.error("--cli is required")
    for p in a.models:
        base[os.path.basename(p)] = open(p, "rb").read()
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:halt_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    tmp = tempfile.mkdtemp(prefix="ocl-infer-fuzz-")
    jobs = []
    for i in range(a.count):
        name = rng.choice(sorted(base))
        d = os.path.join(tmp, f"{i:05d}")
        os.makedirs(d)
        data, label = make_mutant(base[name], rng, d)
        path = os.path.join(d, "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
        jobs.append((i, name, label, path))
    counts, bugs, slowest, messages = {}, [], 0.0, {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(run_one, a.cli, j[3], a.timeout, env): j for j in jobs}
        for n, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            i, name, label, path = futs[fut]
            kind, detail, secs = fut.result()
            slowest = max(slowest, secs)
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "error":
                key = " ".join(detail.replace("ocl-infer: error: ", "").split(":")[-1].split()[:8])
                messages[key] = messages.get(key, 0) + 1
            if kind in ("hang", "crash", "sanitizer"):
                bugs.append((i, name, label, kind, detail))
                if a.keep:
                    dst = os.path.join(a.keep, f"{kind}-{i:05d}-{name}-{label.replace(':', '_')}")
                    shutil.copytree(os.path.dirname(path), dst, symlinks=True)
                if a.corpus and os.listdir(os.path.dirname(path)) == ["model.onnx"]:
                    shutil.copy(path, os.path.join(a.corpus, f"{kind}-{name}-{label.replace(':', '_')}-{i:05d}.onnx"))
            if n % 200 == 0:
                print(f"fuzz_models: {n}/{len(jobs)} {counts}", file=sys.stderr, flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"fuzz_models: {len(jobs)} mutants: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
          f"; slowest {slowest:.1f} s")
    for msg, n in sorted(messages.items(), key=lambda kv: -kv[1])[:a.show_errors]:
        print(f"  {n:5d}  {msg}")
    for b in bugs[:50]:
        print(f"  BUG #{b[0]} seed {b[1]} mutation {b[2]}: {b[3]}: {b[4][:500]}")
    sys.exit(1 if bugs else 0)


if __name__ == "__main__":
    main()
