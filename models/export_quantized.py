#!/usr/bin/env python3
r"""Makes int8 QDQ test models with onnxruntime's static quantizer, with golden outputs.

For each NAME in resnet18, mobilenet_v2, squeezenet1_1, efficientnet_lite0 (the default set;
--models picks others among the fp32 models in --models-dir, a missing one is skipped with a note),
this reads --models-dir/NAME.onnx and writes, under --out (default build/models/int8):
  NAME.qdq.onnx                    QuantizeLinear/DequantizeLinear (QDQ) model, still opset 13:
                                   weights int8 per channel (DequantizeLinear with axis), biases
                                   int32, activations uint8 per tensor; same input/output names
                                   and float32 types as the fp32 model
  NAME.qdq.PHOTO.input.npy         the preprocessed photo, float32 [1,3,224,224]
  NAME.qdq.PHOTO.output.npy        onnxruntime's output for the QDQ model (CPU provider, default
                                   graph optimisation, so ORT's fused integer kernels, one thread)
  NAME.PHOTO.fp32.output.npy       onnxruntime's output for the fp32 model, same settings
for PHOTO in --golden-photos (default dog, eagle, giraffe).

Quantization: onnxruntime.quantization.quant_pre_process (shape inference and ORT's basic graph
optimisation: BatchNormalization folds into the Conv before it, constants fold; the script stops
with an error if it fails), then quantize_static with
quant_format=QDQ, per_channel=True, weight_type=QInt8, activation_type=QUInt8,
calibrate_method=MinMax, reduce_range=True (weights in [-64, 64]) and otherwise default options
(symmetric weights, asymmetric activations at full range, bias quantized to int32), calibrated on
every photo below at batch 1. reduce_range makes the golden data exact on every x86 CPU: without
VNNI, onnxruntime's uint8 x int8 kernels sum pairs of products in 16 bits (vpmaddubsw), which
saturates where 255 * |w0| + 255 * |w1| > 32767; with 7-bit weights it cannot, and its outputs are
the exact integer arithmetic that ocl-infer computes (an AVX2-only AMD EPYC gave up to 13
quantization steps of difference on full-range weights).

Photos are real photographs from Debian's darknet package (/usr/share/darknet/data: dog, eagle,
giraffe, horses, kite, person, and scream, Munch's painting), never fetched from the network;
--calib-photos adds more. Of the other Debian packages looked at, opencv-data holds only cascade
XML files, and scikit-image's sample photos (astronaut, chelsea, coffee, rocket, ... under
/usr/lib/python3/dist-packages/skimage/data) come with python3-skimage, which pulls in 42 packages
(scipy, matplotlib, ...; about 360 MB) into the system site-packages that build/pyenv sees.
Each photo is preprocessed as the ocl-infer CLI does (export_efficientnet_lite0.preprocess, whose
resize and crop are imported, not copied): decode RGB, bilinear resize of the shorter side to 256,
centre crop 224, x/255, (x - mean)/std, NCHW float32, with the CLI's default ImageNet
mean 0.485,0.456,0.406 and std 0.229,0.224,0.225, except for efficientnet_lite0, which was
trained on (pixel - 127)/128 and gets export_efficientnet_lite0's MEAN/STD (the values
tools/demo.sh passes to the CLI). The torchvision models have random weights (see
export_torchvision.py): their activations are realistic, their top-1 classes mean nothing.

Printed per model: top-1 and max |QDQ - fp32| on each golden photo, and how far ORT's fused
integer kernels (QLinearConv, ...) are from running the QDQ graph as written (no graph optimisation:
DequantizeLinear, float op, QuantizeLinear), a scale for a runtime's tolerance; the QDQ graph's
op histogram, which ops sit between DQ and Q, the weights' and biases' DequantizeLinear (type, axis,
zero point), input/output names, and the graph ORT actually runs.

A model whose files all exist is skipped unless --force. Files are written through temporary
names, the golden .npy files last, so a failed model is never "up to date". Nothing is downloaded.

Dependencies: onnxruntime 1.32's quantization tool needs onnx >= 1.16 and ml_dtypes, while
build/pyenv has Debian's onnx 1.12 (which the torch 1.13 exporters are checked with). They go into
a separate folder that this script puts in front of sys.path (--deps, default build/quantdeps):
  build/pyenv/bin/pip install --no-deps --target build/quantdeps \
      onnx==1.17.0 ml_dtypes==0.5.4 numpy==1.26.4
(onnx 1.17 is the newest that accepts Debian's protobuf 4.21; numpy 1.x because Debian's torch 1.13,
which the preprocessing's cross-check uses, is built against numpy 1 and fails with numpy 2, which
a plain `pip install ml_dtypes` into build/pyenv pulls in). Then:
  build/pyenv/bin/python models/export_quantized.py
"""

import argparse
import glob
import os
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _deps_dir() -> str:
    # Parsed before argparse: the folder must be on sys.path before onnx is first imported.
    for i, arg in enumerate(sys.argv):
        if arg == "--deps" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--deps="):
            return arg.split("=", 1)[1]
    return os.path.join(REPO_ROOT, "build", "quantdeps")


DEPS_DIR = _deps_dir()
if os.path.isdir(DEPS_DIR):
    sys.path.insert(0, os.path.abspath(DEPS_DIR))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.numpy_helper  # noqa: E402

try:
    import onnxruntime  # noqa: E402
    from onnxruntime.quantization import (  # noqa: E402
        CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process  # noqa: E402
except ImportError as e:
    sys.exit(f"export_quantized: onnxruntime's quantizer cannot be imported ({e}). It needs "
             f"onnx >= 1.16 and ml_dtypes in {DEPS_DIR} (found onnx {onnx.__version__}), and "
             f"Debian's python3-packaging and python3-sympy; models/install_deps.sh installs "
             f"all of them.")

import export_efficientnet_lite0 as lite0  # noqa: E402  (this folder is sys.path[0])

DARKNET_DATA = lite0.DARKNET_DATA
DEFAULT_MODELS = ("resnet18", "mobilenet_v2", "squeezenet1_1", "efficientnet_lite0")
DEFAULT_GOLDEN = ("dog", "eagle", "giraffe")
# The ocl-infer CLI's defaults (--mean, --std; tools/ocl_infer_main.cpp).
CLI_MEAN = [0.485, 0.456, 0.406]
CLI_STD = [0.229, 0.224, 0.225]
# Models trained with another normalisation; the CLI needs --mean/--std for them.
NORMALISATION = {"efficientnet_lite0": (lite0.MEAN, lite0.STD)}


def normalisation(name: str):
    return NORMALISATION.get(name, (CLI_MEAN, CLI_STD))


def preprocess(rgb: np.ndarray, mean, std) -> np.ndarray:
    """export_efficientnet_lite0.preprocess with another mean/std (it reads its module globals)."""
    saved = lite0.MEAN, lite0.STD
    lite0.MEAN, lite0.STD = list(mean), list(std)
    try:
        return lite0.preprocess(rgb)
    finally:
        lite0.MEAN, lite0.STD = saved


class PhotoReader(CalibrationDataReader):
    def __init__(self, input_name: str, tensors):
        self._feeds = [{input_name: t} for t in tensors]
        self._next = 0

    def get_next(self):
        if self._next >= len(self._feeds):
            return None
        self._next += 1
        return self._feeds[self._next - 1]

    def rewind(self):
        self._next = 0


def session(path: str, optimized_path: str = None,
            unfused: bool = False) -> onnxruntime.InferenceSession:
    """ORT CPU session, one thread. optimized_path: also save the graph ORT runs (for the report).
    unfused: no graph optimisation, so Q/DQ and the float ops between them run as written."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    if optimized_path:
        options.optimized_model_filepath = optimized_path
        options.log_severity_level = 3  # not the warning that the saved graph is machine-specific
    if unfused:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def save_npy(path: str, array: np.ndarray) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def histogram(nodes) -> str:
    counts = {}
    for node in nodes:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return ", ".join(f"{op} {n}" for op, n in sorted(counts.items(), key=lambda i: (-i[1], i[0])))


def describe_qdq(model: onnx.ModelProto) -> list:
    """Lines describing the QDQ structure: what sits between DQ and Q, weights, biases."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    graph_outputs = {o.name for o in graph.output}
    lines = []

    # Per op type: how many nodes read only DQ outputs (or constants) and write only into Q.
    stats = {}
    for node in graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            continue
        data_inputs = [i for i in node.input if i and i not in inits
                       and not (i in producer and producer[i].op_type == "Constant")]
        dq_in = all(i in producer and producer[i].op_type == "DequantizeLinear"
                    for i in data_inputs)
        q_out = all(node.output[0] not in graph_outputs and consumers.get(o)
                    and all(c.op_type == "QuantizeLinear" for c in consumers[o])
                    for o in node.output[:1])
        s = stats.setdefault(node.op_type, [0, 0, 0, 0])
        s[0] += 1
        s[1] += dq_in and q_out
        s[2] += dq_in and not q_out
        s[3] += not dq_in
    lines.append("    between DQ and Q (type: total = DQ->op->Q / DQ->op->float / float input):")
    lines.append("      " + "; ".join(f"{op}: {s[0]} = {s[1]}/{s[2]}/{s[3]}"
                                      for op, s in sorted(stats.items(), key=lambda i: -i[1][0])))

    # Does the op's output Q reuse the (scale, zero point) of its DQ activation inputs?
    def qparams(node):
        vals = []
        for name in node.input[1:3]:
            vals.append(onnx.numpy_helper.to_array(inits[name]).tolist() if name in inits else None)
        return vals

    shared = {}
    for node in graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") or not node.output:
            continue
        outs = consumers.get(node.output[0], [])
        if len(outs) != 1 or outs[0].op_type != "QuantizeLinear":
            continue
        out_q = qparams(outs[0])
        ins = [producer[i] for i in node.input if i in producer and i not in inits
               and producer[i].op_type == "DequantizeLinear" and producer[i].input[0] not in inits]
        s = shared.setdefault(node.op_type, [0, 0])
        s[0] += len(ins)
        s[1] += sum(qparams(dq) == out_q for dq in ins)
    lines.append("    activation inputs whose (scale, zp) equal the output Q's: " + "; ".join(
        f"{op} {s[1]}/{s[0]}" for op, s in shared.items()))

    # DequantizeLinear of initializers: weights (int8) and biases (int32).
    kinds = {}
    for node in graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits:
            continue
        t = inits[node.input[0]]
        scale = inits.get(node.input[1])
        axis = [a.i for a in node.attribute if a.name == "axis"]
        nscale = int(np.prod(scale.dims)) if scale is not None else -1
        zp = inits.get(node.input[2]) if len(node.input) > 2 else None
        zp_text = "no zp" if zp is None else (
            "zp 0" if not onnx.numpy_helper.to_array(zp).any() else "zp nonzero")
        readers = sorted({c.op_type for c in consumers.get(node.output[0], [])})
        key = (onnx.TensorProto.DataType.Name(t.data_type), f"rank {len(t.dims)}",
               f"axis {axis[0]}" if axis else "no axis",
               "per-channel" if nscale > 1 else "per-tensor", zp_text, "-> " + "/".join(readers))
        kinds[key] = kinds.get(key, 0) + 1
    lines.append("    DequantizeLinear of initializers: " + "; ".join(
        f"{n}x {' '.join(k)}" for k, n in sorted(kinds.items(), key=lambda i: -i[1])))

    # Activation Q/DQ: element types and zero points.
    act = {}
    for node in graph.node:
        if node.op_type == "QuantizeLinear":
            zp = inits.get(node.input[2]) if len(node.input) > 2 else None
            key = onnx.TensorProto.DataType.Name(zp.data_type) if zp is not None else "default"
            if zp is not None:
                key += " zp 0" if not onnx.numpy_helper.to_array(zp).any() else " zp>0"
            act[key] = act.get(key, 0) + 1
    lines.append("    QuantizeLinear (per tensor) outputs: "
                 + ", ".join(f"{k} {n}" for k, n in act.items()))
    gemm = [n for n in graph.node if n.op_type == "Gemm"]
    if gemm:
        lines.append("    Gemm attributes: " + "; ".join(
            str({a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}) for n in gemm))

    for value in graph.input:
        first = [c.op_type for c in consumers.get(value.name, [])]
        lines.append(f"    input  {value.name!r} {describe_type(value)} -> {first}")
    for value in graph.output:
        src = producer.get(value.name)
        lines.append(f"    output {value.name!r} {describe_type(value)} <- "
                     f"{src.op_type if src else 'initializer'}")
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    lines.append(f"    opset: {opsets}")
    return lines


def describe_type(value) -> str:
    t = value.type.tensor_type
    dims = [d.dim_param or d.dim_value for d in t.shape.dim]
    return f"{onnx.TensorProto.DataType.Name(t.elem_type)}{dims}"


def top1(y: np.ndarray) -> int:
    return int(np.asarray(y).reshape(-1).argmax())


def quantize_model(name: str, fp32_path: str, qdq_path: str, calib: dict, workdir: str) -> list:
    """Writes qdq_path; returns lines of notes."""
    notes = []
    mean, std = normalisation(name)
    input_name = onnx.load(fp32_path, load_external_data=False).graph.input[0].name
    tensors = [preprocess(rgb, mean, std) for rgb in calib.values()]

    source = fp32_path
    prep_path = os.path.join(workdir, name + ".preprocessed.onnx")
    t0 = time.perf_counter()
    try:
        quant_pre_process(fp32_path, prep_path)
        source = prep_path
        prep = onnx.load(prep_path)
        notes.append(f"quant_pre_process: {len(prep.graph.node)} nodes "
                     f"({histogram(prep.graph.node)}) in {time.perf_counter() - t0:.1f} s")
    except Exception as e:  # noqa: BLE001
        # Without it BatchNormalization stays unfolded and the QDQ graph is not what the tests
        # expect (and not what users of the quantizer get): fail loudly rather than write it.
        sys.exit(f"export_quantized: {name}: quant_pre_process failed ({type(e).__name__}: {e})")

    tmp = qdq_path + ".tmp.onnx"
    t0 = time.perf_counter()
    quantize_static(
        source, tmp, PhotoReader(input_name, tensors),
        quant_format=QuantFormat.QDQ, per_channel=True,
        weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8,
        calibrate_method=CalibrationMethod.MinMax, reduce_range=True)
    onnx.checker.check_model(onnx.load(tmp))
    os.replace(tmp, qdq_path)
    notes.append(f"quantize_static ({len(tensors)} calibration photos): "
                 f"{time.perf_counter() - t0:.1f} s")
    return notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "build", "models", "int8"),
                        help="output folder (default: %(default)s)")
    parser.add_argument("--models-dir", default=os.path.join(REPO_ROOT, "build", "models"),
                        help="where the fp32 NAME.onnx files are (default: %(default)s)")
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS),
                        help="fp32 models to quantize (default: %(default)s)")
    parser.add_argument("--golden-photos", nargs="+", default=list(DEFAULT_GOLDEN),
                        help="darknet photo stems for golden data (default: %(default)s)")
    parser.add_argument("--calib-photos", nargs="*", default=[],
                        help="extra calibration photos, beside darknet's")
    parser.add_argument("--deps", default=DEPS_DIR,
                        help="folder with onnx>=1.16 and ml_dtypes (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild models whose files exist")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lite0.torch.set_num_threads(1)  # the build machine is shared with a C++ build

    photo_paths = sorted(glob.glob(os.path.join(DARKNET_DATA, "*.jpg"))) + list(args.calib_photos)
    if not photo_paths:
        sys.exit(f"no photos in {DARKNET_DATA}: run models/install_deps.sh (Debian's darknet)")
    calib = {os.path.splitext(os.path.basename(p))[0]: lite0.decode_rgb(p) for p in photo_paths}
    for stem in args.golden_photos:
        if stem not in calib:
            sys.exit(f"golden photo {stem!r} is not among {sorted(calib)}")
    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}; calibration photos: "
          + ", ".join(f"{k} {v.shape[1]}x{v.shape[0]}" for k, v in calib.items()))

    for name in args.models:
        fp32_path = os.path.join(args.models_dir, name + ".onnx")
        if not os.path.exists(fp32_path):
            print(f"{name}: {fp32_path} missing, skipped (models/make_all.sh makes it)")
            continue
        qdq_path = os.path.join(args.out, name + ".qdq.onnx")
        golden = {stem: (os.path.join(args.out, f"{name}.qdq.{stem}.input.npy"),
                         os.path.join(args.out, f"{name}.qdq.{stem}.output.npy"),
                         os.path.join(args.out, f"{name}.{stem}.fp32.output.npy"))
                  for stem in args.golden_photos}
        outputs = [qdq_path] + [p for paths in golden.values() for p in paths]
        if not args.force and all(os.path.exists(p) for p in outputs):
            print(f"{name}: up to date")
            continue

        mean, std = normalisation(name)
        print(f"{name}: mean {[round(m, 6) for m in mean]}, std {[round(s, 6) for s in std]}")
        with tempfile.TemporaryDirectory(prefix="export_quantized.") as workdir:
            for line in quantize_model(name, fp32_path, qdq_path, calib, workdir):
                print("  " + line)
            ort_path = os.path.join(workdir, name + ".ort_optimized.onnx")
            qdq_session = session(qdq_path, ort_path)
            ort_nodes = onnx.load(ort_path).graph.node
        fp32_session = session(fp32_path)
        unfused_session = session(qdq_path, unfused=True)
        input_name = qdq_session.get_inputs()[0].name

        results = {}
        for stem in args.golden_photos:
            x = preprocess(calib[stem], mean, std)
            y_q = qdq_session.run(None, {input_name: x})[0]
            y_f = fp32_session.run(None, {input_name: x})[0]
            y_u = unfused_session.run(None, {input_name: x})[0]
            results[stem] = (x, y_q, y_f, y_u)

        # The lite0 export's golden dog input must come out of the same preprocessing.
        if name == "efficientnet_lite0" and "dog" in results:
            ref_in = os.path.join(args.models_dir, "efficientnet_lite0.dog.input.npy")
            ref_out = os.path.join(args.models_dir, "efficientnet_lite0.dog.output.npy")
            if os.path.exists(ref_in) and os.path.exists(ref_out):
                same = np.array_equal(np.load(ref_in), results["dog"][0])
                err = float(np.abs(np.load(ref_out) - results["dog"][2]).max())
                print(f"  vs export_efficientnet_lite0's dog: input identical {same}, "
                      f"fp32 output max diff from PyTorch {err:.2e}")
                if not same:
                    sys.exit("preprocessing differs from export_efficientnet_lite0's")

        for stem, (x, y_q, y_f, y_u) in results.items():
            in_path, q_path, f_path = golden[stem]
            save_npy(in_path, x)
            save_npy(f_path, y_f.astype(np.float32))
            save_npy(q_path, y_q.astype(np.float32))
            diff = float(np.abs(y_q - y_f).max())
            unfused_diff = float(np.abs(y_u - y_q).max())
            print(f"  {stem:8s} top-1 qdq {top1(y_q):4d} fp32 {top1(y_f):4d} "
                  f"{'same' if top1(y_q) == top1(y_f) else 'DIFFERENT'}; max|qdq - fp32| "
                  f"{diff:.3g} (max|fp32| {float(np.abs(y_f).max()):.3g}); unfused QDQ "
                  f"(DQ, float op, Q) vs ORT's integer kernels {unfused_diff:.3g}")

        qdq = onnx.load(qdq_path)
        print(f"  QDQ graph: {len(qdq.graph.node)} nodes: {histogram(qdq.graph.node)}")
        for line in describe_qdq(qdq):
            print(line)
        print(f"  onnxruntime CPU runs it as {len(ort_nodes)} nodes: {histogram(ort_nodes)}")
        for p in outputs:
            print(f"  wrote {p} ({os.path.getsize(p)} bytes)")


if __name__ == "__main__":
    main()
