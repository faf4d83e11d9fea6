#!/usr/bin/env bash
# Installs the Debian packages needed to build ocl-infer and run its tests on the CPU OpenCL
# device (PoCL). Idempotent: does nothing when everything is installed.
set -euo pipefail
pkgs=(build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
      libprotobuf-dev protobuf-compiler libonnx-dev libstb-dev libgtest-dev libonnx-testdata
      python3 python3-numpy oclgrind
      python3-dev python3-venv python3-pip python3-pytest python3-onnx pybind11-dev ninja-build)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
