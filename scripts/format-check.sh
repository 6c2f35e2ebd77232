#!/usr/bin/env bash
# The formatting part of .ci/run: every C++ and CUDA source tracked by git is as clang-format 14
# (Debian 12's) formats it with .clang-format. Fix with: git ls-files '*.h' '*.cpp' '*.cu' '*.cuh'
# '*.inl' | xargs clang-format-14 -i
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! command -v clang-format-14 >/dev/null; then
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y --no-install-recommends clang-format-14 ||
    { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y --no-install-recommends clang-format-14; }
fi
cd "$root"
bad=()
while IFS= read -r f; do
  clang-format-14 --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' '*.inl')
if [ ${#bad[@]} -gt 0 ]; then
  printf 'format-check: not clang-format clean: %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format-check: every source is clang-format clean" >&2
