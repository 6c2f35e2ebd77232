#!/usr/bin/env bash
# Renders the workbench under Xvfb into docs/*.png (used by the README): the default run after a
# few steps, aux-blowup stopped at its fire, and the inspector on a dumped buffer (corrupt-bar).
# Needs the GUI built (scripts/nanscope run, or cmake --build build) and xvfb-run (Debian: xvfb).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin="${NANSCOPE_BUILD_DIR:-$root/build}/gui/nanscope"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shot() {
  xvfb-run -a -s "-screen 0 1600x1000x24" "$bin" --out-root "$tmp" "$@"
}
shot --screenshot "$root/docs/screenshot-default.png" --screenshot-after steps:40
shot --scenario aux-blowup --screenshot "$root/docs/screenshot-aux-blowup.png" --screenshot-after fire
shot --scenario corrupt-bar --screenshot "$root/docs/screenshot-inspector.png" --screenshot-after inspect
ls -la "$root"/docs/screenshot-*.png
