#!/usr/bin/env bash
# Checks with readelf -d that none of the given ELF files needs a CUDA library (libcudart,
# libcublas, libcublasLt, libcuda, libnv*) or has a run path into a CUDA toolkit: nanscope's
# programs load the CUDA backend as a plugin and must start where no CUDA is installed.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: no_cuda_link.sh ELF..." >&2; exit 2; }
status=0
for f in "$@"; do
  dyn=$(readelf -d "$f" 2>&1) || { echo "no_cuda_link: readelf -d $f failed: $dyn" >&2; status=1; continue; }
  if grep -E "\(NEEDED\).*\[(libcuda|libcudart|libcublas|libnv)" <<<"$dyn" >&2; then
    echo "no_cuda_link: $f needs a CUDA library (above)" >&2
    status=1
  fi
  if grep -E "\((RUNPATH|RPATH)\).*cuda" <<<"$dyn" >&2; then
    echo "no_cuda_link: $f has a run path into a CUDA toolkit (above)" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "no_cuda_link: $# file(s) need no CUDA library and have no run path into a toolkit"
exit $status
