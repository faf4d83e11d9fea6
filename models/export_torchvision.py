#!/usr/bin/env python3
"""Exports torchvision classifiers with random weights as ONNX test models.

For each NAME in resnet18, mobilenet_v2, squeezenet1_1 (the default set, which the tests use) and,
on request (--models, or --extra), resnet50, efficientnet_b0, densenet121, convnext_tiny (bigger
models for benchmarks; convnext_tiny's LayerNorm exports at opset 13 as the decomposed
ReduceMean/Sub/Pow/Sqrt/Div pattern and its GELU as Erf arithmetic), this writes, under --out:
  NAME.onnx        opset 13; input "input" float32 [batch,3,224,224], output "logits"
                   float32 [batch,1000], with a symbolic batch dimension named "batch".
                   BatchNormalization stays a node of its own, not folded into the Conv before it,
                   so both the runtime's BN kernel and its Conv+BN fusion get exercised.
  NAME.input.npy   a fixed N(0,1) input, float32 [1,3,224,224]
  NAME.output.npy  PyTorch's output for it, float32 [1,1000]

Weights are torchvision's initialisation under a fixed seed, then made into a better test:
all-zero biases become random, every BatchNorm gets random non-identity parameters and statistics
(see calibrate_batchnorm), and the classifier is rescaled so that logits are O(1) and the top-1
class depends on the input. A model whose three files exist is skipped unless --force. When
onnxruntime is importable, the exported graph is run at batch 1 and 2 and compared with PyTorch,
so the golden files describe the ONNX graph, not just PyTorch's model.

Run with a python that sees Debian's python3-torch, python3-torchvision and python3-onnx
(models/install_deps.sh sets one up).
"""

import argparse
import copy
import os
import sys

import numpy as np
import onnx
import torch
import torchvision

DEFAULT_MODELS = ("resnet18", "mobilenet_v2", "squeezenet1_1")
EXTRA_MODELS = ("resnet50", "efficientnet_b0", "densenet121", "convnext_tiny")
# The seed of a model derives from its index here: append, never reorder, so that every existing
# model keeps its bytes.
MODELS = DEFAULT_MODELS + EXTRA_MODELS
OPSET = 13
SEED = 20240601
INPUT_SHAPE = (1, 3, 224, 224)


def build_model(name: str, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    randomize_zero_biases(model, generator)
    calibrate_batchnorm(model, generator)
    normalize_classifier(model, generator)
    return model


def randomize_zero_biases(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Replaces all-zero Conv/Linear biases (squeezenet's initialisation) with N(0, 0.1).

    A zero bias tests nothing, and the exporter shares identical initializers through Identity
    nodes, which would make the graph less typical.
    """
    with torch.no_grad():
        for module in model.modules():
            bias = getattr(module, "bias", None)
            if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)) and bias is not None \
                    and not bias.any():
                bias.copy_(torch.randn(bias.shape, generator=generator) * 0.1)


def calibrate_batchnorm(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Gives every BatchNorm2d random, non-identity parameters and statistics near the real ones.

    Running statistics are set from the batch statistics each BN sees on random inputs, then
    perturbed (mean += N(0, 0.1) * std, var *= U(0.5, 1.5)); weight ~ U(0.5, 1.5), bias ~ N(0, 0.1).
    Plain random statistics (mean ~ N(0, 0.1), var ~ U(0.5, 1.5)) do not track the activations of
    an untrained network: in mobilenet_v2 they saturate every ReLU6 and the logits stop depending
    on the input. Pre-hooks run in graph order, so one forward pass calibrates each BN on the
    output of the already-calibrated layers before it.
    """

    def set_statistics(module, inputs):
        x = inputs[0]
        n = module.num_features
        mean = x.mean(dim=(0, 2, 3))
        var = x.var(dim=(0, 2, 3))
        module.running_mean.copy_(mean + torch.randn(n, generator=generator) * 0.1 * var.sqrt())
        module.running_var.copy_(var * (torch.rand(n, generator=generator) + 0.5) + module.eps)
        module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
        module.bias.copy_(torch.randn(n, generator=generator) * 0.1)

    handles = [m.register_forward_pre_hook(set_statistics)
               for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    with torch.no_grad():
        model(torch.randn(8, *INPUT_SHAPE[1:], generator=generator))
    for handle in handles:
        handle.remove()


def normalize_classifier(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Standardises each class's pre-activation in the last layer, then scales the logits to O(1).

    Post-ReLU features of an untrained network share a large positive mean, and its classes differ
    in weight norm; either makes one class win for every input. Giving each class zero mean and unit
    variance over random inputs makes the top-1 class depend on the input, also for squeezenet,
    whose last layer is a 1x1 Conv followed by ReLU and average pooling. The final scale keeps the
    logits O(1), so that comparing them with a tolerance means something.
    """
    last = [m for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))][-1]
    captured = []

    def capture(module, inputs, output):
        captured.append(output.clone())  # squeezenet applies an in-place ReLU to this output

    handle = last.register_forward_hook(capture)
    batch = torch.randn(16, *INPUT_SHAPE[1:], generator=generator)
    with torch.no_grad():
        model(batch)
        handle.remove()
        z = captured[0]
        if z.dim() == 4:  # per class over batch and positions
            z = z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])
        mean, std = z.mean(dim=0), z.std(dim=0)
        shape = (-1,) + (1,) * (last.weight.dim() - 1)
        last.weight /= std.reshape(shape)
        last.bias.copy_((last.bias - mean) / std)
        # Positive scaling commutes with squeezenet's ReLU and average pooling.
        scale = 2.0 / model(batch).std()
        last.weight *= scale
        last.bias *= scale


def emulate_fp16_storage(model: torch.nn.Module, x: torch.Tensor) -> np.ndarray:
    """float16 storage with float32 arithmetic: weights, buffers and every leaf module's output
    rounded to float16 (on a copy of the model). What --precision fp16 should cost, done right."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(p.half().float())
        for b in m.buffers():
            if b.dtype == torch.float32:
                b.copy_(b.half().float())

    def rounded(module, inputs, output):
        return output.half().float() if isinstance(output, torch.Tensor) else output

    for module in m.modules():
        if len(list(module.children())) == 0:
            module.register_forward_hook(rounded)
    with torch.no_grad():
        return m(x.half().float()).numpy()


def export(model: torch.nn.Module, example: torch.Tensor, path: str) -> None:
    tmp = path + ".tmp"
    # PRESERVE with the model in eval mode exports inference-mode BatchNormalization but skips the
    # exporter's eval-only peephole pass, which is what folds BN into the preceding Conv.
    torch.onnx.export(
        model,
        example,
        tmp,
        opset_version=OPSET,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False,
    )
    os.replace(tmp, path)


def check_outputs(name: str, model: torch.nn.Module, output: np.ndarray, seed: int) -> None:
    """Fails unless logits are finite, of sane size, and the top-1 class depends on the input."""
    peak = float(np.abs(output).max())
    if not np.isfinite(output).all() or not 1e-3 < peak < 1e4:
        sys.exit(f"{name}: degenerate output, max|logit| = {peak}")
    generator = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        batch = torch.randn(8, *INPUT_SHAPE[1:], generator=generator)
        top1 = model(batch).argmax(dim=1).tolist()
    if len(set(top1)) < 2:
        sys.exit(f"{name}: top-1 class is {top1[0]} for every random input")


def float32_error(model: torch.nn.Module, x: torch.Tensor, output: np.ndarray) -> float:
    """Returns max |float32 PyTorch - float64 PyTorch| over the logits for input x.

    This is how far any float32 implementation can fairly be expected to drift from the golden
    output. Random-weight networks amplify rounding with depth (their features carry a large
    input-independent part that the standardised classifier cancels): relative to the largest
    logit, resnet18 drifts by 8e-6 and resnet50 by 9e-5, close to the old fixed 1e-4 tolerance.
    """
    with torch.no_grad():
        exact = copy.deepcopy(model).double()(x.double()).numpy()
    return float(np.abs(output.astype(np.float64) - exact).max())


def check_with_onnxruntime(path: str, x: np.ndarray, expected: np.ndarray,
                           fp32_error: float) -> str:
    """Runs the ONNX file at batch 1 and 2; fails if it differs from expected by more than
    max(1e-4 * max(1, max|logit|), 3 * fp32_error)."""
    try:
        import onnxruntime
    except ImportError:
        return "onnxruntime not installed, not cross-checked"
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    got = session.run(None, {"input": x})[0]
    # Batch 2 also proves the symbolic batch dimension really is symbolic.
    got2 = session.run(None, {"input": np.concatenate([x, x])})[0]
    err = max(float(np.abs(got - expected).max()), float(np.abs(got2[1:] - expected).max()))
    scale = float(np.abs(expected).max())
    tolerance = max(1e-4 * max(1.0, scale), 3.0 * fp32_error)
    if err > tolerance:
        os.remove(path)
        sys.exit(f"{path}: onnxruntime differs from torch by {err:.3g} > {tolerance:.3g} "
                 f"(max|logit| {scale:.3g}, float32 torch vs float64 {fp32_error:.3g})")
    return f"onnxruntime max abs diff {err:.2e}"


def count_ops(path: str) -> dict:
    counts = {}
    for node in onnx.load(path).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--force", action="store_true", help="re-export models whose files exist")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=None,
                        help=f"models to export (default: {' '.join(DEFAULT_MODELS)})")
    parser.add_argument("--fp16emul", action="store_true",
                        help="also write NAME.fp16emul.npy: PyTorch's output with float16 storage "
                             "emulated (for tools/precision_models.py)")
    parser.add_argument("--extra", action="store_true",
                        help=f"also export {', '.join(EXTRA_MODELS)}")
    args = parser.parse_args()
    if args.models is None:
        args.models = list(DEFAULT_MODELS)
    if args.extra:
        args.models += [m for m in EXTRA_MODELS if m not in args.models]
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)  # the build machine is shared with a C++ build

    for name in args.models:
        stem = os.path.join(args.out, name)
        paths = [stem + ".onnx", stem + ".input.npy", stem + ".output.npy"]
        emul_path = stem + ".fp16emul.npy"
        if not args.force and all(os.path.exists(p) for p in paths):
            if args.fp16emul and not os.path.exists(emul_path):
                seed = SEED + 100 * MODELS.index(name)
                model = build_model(name, seed)
                x = torch.randn(INPUT_SHAPE, generator=torch.Generator().manual_seed(seed + 3))
                with torch.no_grad():
                    y = model(x).numpy().astype(np.float32)
                if not np.array_equal(y, np.load(paths[2])):
                    sys.exit(f"{name}: rebuilt model does not reproduce {paths[2]}; use --force")
                np.save(emul_path, emulate_fp16_storage(model, x).astype(np.float32))
                print(f"wrote {emul_path}")
            else:
                print(f"{name}: up to date")
            continue

        seed = SEED + 100 * MODELS.index(name)
        model = build_model(name, seed)
        x = torch.randn(INPUT_SHAPE, generator=torch.Generator().manual_seed(seed + 3))
        with torch.no_grad():
            y = model(x).numpy().astype(np.float32)
        check_outputs(name, model, y, seed)

        fp32_error = float32_error(model, x, y)

        export(model, x, paths[0])
        onnx.checker.check_model(onnx.load(paths[0]))
        ops = count_ops(paths[0])
        bn = ops.get("BatchNormalization", 0)
        if name not in ("squeezenet1_1", "convnext_tiny") and bn == 0:  # these have no BatchNorm
            os.remove(paths[0])
            sys.exit(f"{paths[0]}: BatchNormalization nodes were folded away")
        verdict = check_with_onnxruntime(paths[0], x.numpy(), y, fp32_error)
        # The golden files come last: a model that failed a check is never "up to date".
        np.save(paths[1], x.numpy().astype(np.float32))
        np.save(paths[2], y)
        if args.fp16emul:
            np.save(emul_path, emulate_fp16_storage(model, x).astype(np.float32))
            paths.append(emul_path)
        for p in paths:
            print(f"wrote {p}")
        top2 = np.sort(y[0])[-2:]
        print(f"  {name}: {sum(ops.values())} nodes, {bn} BatchNormalization, "
              f"max|logit| {np.abs(y).max():.3g}, top-1 {int(y.argmax())} "
              f"(lead over top-2 {top2[1] - top2[0]:.3g}); float32 vs float64 torch "
              f"{fp32_error:.2e}, {verdict}")
        print("    ops: " + ", ".join(f"{op} {n}" for op, n in
                                     sorted(ops.items(), key=lambda item: (-item[1], item[0]))))


if __name__ == "__main__":
    main()
