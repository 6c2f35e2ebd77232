#!/usr/bin/env bash
# A run with an injected NaN read back with h5py (Debian's python3-h5py, /usr/bin/python3), and
# the documentation's h5py example run on it. A C51 mass watch that trips at every C51 row (threshold
# 1e-12: float32 rows are never of mass 1 exactly) fills /watches; slot 5 is off (/steps/checked).
set -euo pipefail
bin=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
small="--set data.bars=400 --set model.batch=8 --set model.hidden=16 --set model.bottleneck=8
       --set model.iqn_n=4 --set model.iqn_n_target=4 --set model.iqn_k=4 --set model.iqn_cos=8
       --set model.aux_hidden=8"
set +e
# shellcheck disable=SC2086
"$bin" --backend cpu --out run --folds 3 --steps-per-fold 5 $small \
  --inject slot:aux_loss@0:2:posinf:3 --inject param:iqn.out.w@1:3 --set halt.on_fire=\"never\" \
  --set watch.c51_mass=1e-12 --set 'sentinel.disabled=[5]' --json --quiet > summary.json
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "expected exit 1, got $rc"; exit 1; }
/usr/bin/python3 "$src/tests/io/check_files.py" summary.json
out=$(/usr/bin/python3 "$src/docs/examples/read_run.py" run)
echo "$out"
grep -q "fold 1: entry iqn_quantiles" <<<"$out"
grep -q "first_fire at fold 0 step 2: aux_loss (8,) nan=0 first_bad=3" <<<"$out"
# The documentation shows the example verbatim.
grep -qF "$(head -n 5 "$src/docs/examples/read_run.py")" "$src/docs/files.md"
