#!/usr/bin/env bash
# The PyTorch twin as a third opinion on the CPU backend's step: a fixture step from twin_fixture,
# recomputed with autograd by bench/torch_twin.py (Debian's python3-torch, from /usr/bin/python3).
# PyTorch is in scripts/debian-packages.txt: without it the test fails and says so (a twin that
# cannot run checks nothing). The GPU machine runs the same script's Python against the CUDA backend.
set -euo pipefail
fixture_bin=$1
src=$2
if ! why=$(/usr/bin/python3 -c "import torch, h5py" 2>&1); then
  echo "twin.torch: /usr/bin/python3 cannot import torch and h5py: ${why##*$'\n'}" >&2
  echo "(Debian's python3-torch and python3-h5py," >&2
  echo "listed in scripts/debian-packages.txt; scripts/nanscope test installs them): the twin cannot run" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fixture_bin" "$tmp/fixture.h5" cpu 3
/usr/bin/python3 "$src/bench/torch_twin.py" "$tmp/fixture.h5" --tol 1e-4
