#!/usr/bin/env bash
# The PyTorch twin as a third opinion on the CPU backend's step: a fixture step from twin_fixture,
# recomputed with autograd by bench/torch_twin.py (Debian's python3-torch, from /usr/bin/python3).
# Skipped (exit 77) where PyTorch is not installed; the GPU machine runs it against the CUDA backend.
set -euo pipefail
fixture_bin=$1
src=$2
if ! /usr/bin/python3 -c "import torch, h5py" 2>/dev/null; then
  echo "PyTorch (python3-torch) is not installed: twin skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fixture_bin" "$tmp/fixture.h5" cpu 3
/usr/bin/python3 "$src/bench/torch_twin.py" "$tmp/fixture.h5" --tol 1e-4
