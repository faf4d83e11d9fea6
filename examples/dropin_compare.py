#!/usr/bin/env python3
"""ocl_infer as a drop-in for onnxruntime: the same code, one different session line.

    build/pyenv/bin/python examples/dropin_compare.py [--models-dir build/models] [--rtol 1e-4]

`outputs_of` below is what an application does with onnxruntime; it runs once with
`onnxruntime.InferenceSession` and once with `ocl_infer.InferenceSession` and nothing else
changes. For every model (the README's examples that exist in --models-dir, plus a float16-input
model written here) and every input set, each output must match onnxruntime's within rtol of the
output's largest magnitude (max |ocl - ort| <= rtol * max(1, max |ort|)), with the same shape and
dtype. Covered: dynamic shapes (batch and sequence lengths), int64 inputs (token ids, a sample
rate), float16 inputs, models with several outputs. Prints one line per check; exits 1 on any
mismatch.
"""

import argparse
import os
import sys
import tempfile

import numpy as np


def outputs_of(runtime, path, feeds):
    """Application code, written for onnxruntime: only the module differs between the runs."""
    session = runtime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def float16_input_model(folder):
    """A float16-input network (as a model exported with half inputs looks): Cast up, Conv,
    Relu, GlobalAveragePool, float32 output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(7).standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.2, "w")
    graph = helper.make_graph([
        helper.make_node("Cast", ["image"], ["x"], to=TensorProto.FLOAT),
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["pooled"]),
    ], "half_input", [helper.make_tensor_value_info("image", TensorProto.FLOAT16, ["batch", 3, "h", "w"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", 6, 1, 1])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = os.path.join(folder, "half_input.onnx")
    onnx.save(model, path)
    return path


def cases(models_dir, tmp):
    """(label, model path, feeds) for each check; models missing from models_dir are skipped."""
    rng = np.random.default_rng(0)

    def have(name):
        return os.path.exists(os.path.join(models_dir, name + ".onnx"))

    def path(name):
        return os.path.join(models_dir, name + ".onnx")

    if have("squeezenet1_1"):  # dynamic batch
        for batch in (1, 2):
            yield f"squeezenet1_1 batch {batch}", path("squeezenet1_1"), {
                "input": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}
    if have("gpt_decoder"):  # int64 token ids, dynamic length
        for tokens in (16, 48):
            yield f"gpt_decoder {tokens} tokens (int64 ids)", path("gpt_decoder"), {
                "ids": rng.integers(0, 97, (1, tokens)).astype(np.int64)}
    if have("bigru"):  # two outputs, dynamic time and batch
        for time, batch in ((5, 1), (11, 3)):
            yield f"bigru time {time} batch {batch} (2 outputs)", path("bigru"), {
                "x": rng.standard_normal((time, batch, 20)).astype(np.float32)}
    if have("vad_like"):  # int64 scalar input selecting a branch, three outputs
        for sr, samples in ((16000, 512), (8000, 256)):
            yield f"vad_like sr {sr} (int64 scalar, 3 outputs)", path("vad_like"), {
                "x": rng.standard_normal((1, samples)).astype(np.float32) * 0.1,
                "sr": np.array(sr, np.int64),
                "h": np.zeros((2, 1, 64), np.float32), "c": np.zeros((2, 1, 64), np.float32)}
    half = float16_input_model(tmp)
    for shape in ((1, 3, 20, 20), (2, 3, 9, 13)):
        yield f"half_input {list(shape)} (float16 input)", half, {
            "image": rng.standard_normal(shape).astype(np.float16)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--models-dir", default=os.path.join(repo, "build", "models"))
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()

    import ocl_infer
    import onnxruntime

    failures, checks = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for label, path, feeds in cases(args.models_dir, tmp):
            expected = outputs_of(onnxruntime, path, feeds)
            got = outputs_of(ocl_infer, path, feeds)
            for name, want in expected.items():
                checks += 1
                have = got.get(name)
                if have is None or have.shape != want.shape or have.dtype != want.dtype:
                    print(f"FAIL {label} {name}: {None if have is None else (have.shape, have.dtype)} "
                          f"vs onnxruntime {(want.shape, want.dtype)}")
                    failures += 1
                    continue
                diff = float(np.abs(have.astype(np.float64) - want.astype(np.float64)).max()) if want.size else 0.0
                scale = max(1.0, float(np.abs(want.astype(np.float64)).max()) if want.size else 0.0)
                ok = diff <= args.rtol * scale
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {label} {name} {list(want.shape)} {want.dtype}: "
                      f"max |diff| {diff:.2e} (limit {args.rtol * scale:.2e})")
    print(f"{checks - failures}/{checks} outputs match onnxruntime {onnxruntime.__version__} "
          f"(ocl_infer {ocl_infer.__version__} on {ocl_infer.list_devices()[0]['name']})")
    return 1 if failures or checks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
