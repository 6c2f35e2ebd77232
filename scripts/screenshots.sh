#!/usr/bin/env bash
# Renders the workbench under Xvfb into docs/*.png (used by the README): the default run after a
# few steps, aux-blowup stopped at its fire, and the inspector on a dumped buffer (corrupt-bar).
# Needs the GUI built (scripts/nanscope run, or cmake --build build); uses xvfb-run (Debian: xvfb)
# when it is there, Qt's offscreen platform otherwise.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin="${NANSCOPE_BUILD_DIR:-$root/build}/gui/nanscope"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shot() {
  if command -v xvfb-run >/dev/null; then
    xvfb-run -a -s "-screen 0 1600x1000x24" "$bin" --out-root "$tmp" "$@"
  else
    QT_QPA_PLATFORM=offscreen "$bin" --out-root "$tmp" "$@"
  fi
}
shot --screenshot "$root/docs/screenshot-default.png" --screenshot-after steps:40
shot --scenario aux-blowup --screenshot "$root/docs/screenshot-aux-blowup.png" --screenshot-after fire
shot --scenario corrupt-bar --screenshot "$root/docs/screenshot-inspector.png" --screenshot-after inspect
# Offline: a 3-fold run with a fire in each fold, every fold's entry framed.
"${NANSCOPE_BUILD_DIR:-$root/build}/cli/nanscope-run" --backend cpu --folds 3 --steps-per-fold 40 --guard \
  --set halt.on_fire=never --inject slot:32@0:20:neginf --inject slot:aux_pred_nb@1:5 \
  --inject slot:c51_loss@2:10:posinf --out "$tmp/three" --quiet || true
shot "$tmp/three/run.h5" --screenshot "$root/docs/screenshot-offline.png" --screenshot-after steps:0
ls -la "$root"/docs/screenshot-*.png
