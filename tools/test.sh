#!/usr/bin/env bash
# Sets up everything (Debian packages, build, test models) and runs all tests with ctest.
# Idempotent. Extra arguments go to ctest (e.g. -R conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
tools/build.sh
models/make_all.sh build/models >/dev/null
cd build
ctest --output-on-failure -j2 "$@"
