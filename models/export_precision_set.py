#!/usr/bin/env python3
"""Exports 17 torchvision architectures with random weights for the fp16 precision check.

    build/pyenv/bin/python models/export_precision_set.py --out build/models/precision \\
        [--bn plain|calibrated] [--models resnet18 ...] [--opset 17] [--force]

For each model NAME this writes, under --out:
  NAME.onnx         input "input" float32 [1,3,H,W] (224, or 299... as the model wants: all 224
                    here), output "logits" float32 [1,1000]; BatchNormalization kept as nodes.
  NAME.input.npy    a fixed N(0,1) input
  NAME.output.npy   PyTorch's float32 output for it (the reference)
  NAME.fp16emul.npy PyTorch's output with every weight, buffer and leaf-module output rounded to
                    float16 and float32 arithmetic: what fp16 *storage* costs, done right

Weights: torchvision's initialisation under a fixed seed, all-zero biases made random, and every
BatchNorm given random parameters and statistics, in one of two ways (--bn):
  plain       running_mean ~ N(0, 0.1), running_var ~ U(0.5, 1.5), weight ~ U(0.5, 1.5),
              bias ~ N(0, 0.1): the usual "random BN statistics". They do not track an untrained
              network's activations, so the logits depend little on the input (a constant part
              dominates) and float16 storage costs about one rounding: 0.05-0.09 % of max |logit|
              in the emulation below.
  calibrated  statistics measured on random inputs, then perturbed
              (export_torchvision.calibrate_batchnorm): activations stay O(1) with depth and the
              logits depend on the input. The harder set: rounding grows with depth, and the
              emulation loses 0.1-3 % of max |logit| (resnet50 the most).
Unlike the test models of export_torchvision.py the classifier is not standardised per class (that
makes the logits a small difference of large features and amplifies every rounding). Prints each
model's emulated float16 error relative to max |logit|, and whether the top-1 class depends on the
input.
"""

import argparse
import os
import sys

import numpy as np
import onnx
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torchvision as base  # noqa: E402

# Append only: a model's seed derives from its index.
MODELS = (
    "resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
    "squeezenet1_0", "squeezenet1_1", "shufflenet_v2_x1_0", "densenet121", "efficientnet_b0",
    "googlenet", "regnet_x_400mf", "regnet_y_400mf", "mnasnet1_0", "convnext_tiny", "alexnet",
    "resnext50_32x4d",
)
SEED = 20261130
INPUT_SHAPE = (1, 3, 224, 224)


def build_model(name: str, seed: int, bn: str) -> torch.nn.Module:
    torch.manual_seed(seed)
    kwargs = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    base.randomize_zero_biases(model, generator)
    if bn == "calibrated":
        base.calibrate_batchnorm(model, generator)
    else:
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, torch.nn.BatchNorm2d):
                    n = module.num_features
                    module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
                    module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
                    module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                    module.bias.copy_(torch.randn(n, generator=generator) * 0.1)
    return model


def top1_classes(model: torch.nn.Module, seed: int) -> list:
    with torch.no_grad():
        batch = torch.randn((4,) + INPUT_SHAPE[1:], generator=torch.Generator().manual_seed(seed + 4))
        return model(batch).argmax(dim=1).tolist()


def export(model: torch.nn.Module, example: torch.Tensor, path: str, opset: int) -> None:
    tmp = path + ".tmp"
    torch.onnx.export(model, example, tmp, opset_version=opset, input_names=["input"],
                      output_names=["logits"], training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False)
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--bn", choices=("plain", "calibrated"), default="plain")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)

    for name in args.models:
        stem = os.path.join(args.out, name)
        paths = [stem + ".onnx", stem + ".input.npy", stem + ".output.npy", stem + ".fp16emul.npy"]
        if not args.force and all(os.path.exists(p) for p in paths):
            print(f"{name}: up to date")
            continue
        seed = SEED + 100 * MODELS.index(name)
        model = build_model(name, seed, args.bn)
        x = torch.randn(INPUT_SHAPE, generator=torch.Generator().manual_seed(seed + 3))
        with torch.no_grad():
            y = model(x).numpy().astype(np.float32)
        peak = float(np.abs(y).max())
        if not np.isfinite(y).all() or not 1e-3 < peak < 1e6:
            sys.exit(f"{name}: degenerate output, max|logit| = {peak}")
        emulated = base.emulate_fp16_storage(model, x).astype(np.float32)
        export(model, x, paths[0], args.opset)
        onnx.checker.check_model(onnx.load(paths[0]))
        np.save(paths[1], x.numpy().astype(np.float32))
        np.save(paths[2], y)
        np.save(paths[3], emulated)
        top2 = np.sort(y[0])[-2:]
        print(f"{name}: max|logit| {peak:.3g}, top-1 lead {(top2[1] - top2[0]) / peak:.2%} of max, "
              f"emulated fp16 storage error {np.abs(emulated - y).max() / peak:.3%} of max, "
              f"same top-1 {int(emulated.argmax()) == int(y.argmax())}, "
              f"top-1 over 4 random inputs {top1_classes(model, seed)}", flush=True)


if __name__ == "__main__":
    main()
