#!/usr/bin/env bash
# Renders the workbench under Xvfb into docs/*.png (used by the README): the default run after a
# few steps, aux-blowup stopped at its fire, the inspector on a dumped buffer (corrupt-bar) and on
# a cell whose buffer is not kept, a
# 6 x 400 run zoomed onto its entry point (also as seen with deuteranopia), lr-explosion's step
# compare and magnitude view, the Help menu, watch trips in the Events dock, a cell recomputed by
# time travel and a sweep.
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
# A cell whose buffer is not kept (bn_d_concat the step before its fire): the inspector says so and
# offers the first-fire dump.
shot "$tmp/three/run.h5" --screenshot "$root/docs/screenshot-inspector-none.png" --screenshot-after steps:0 \
  --screenshot-select 0:19:bn_d_concat
# The default 6 x 400 run with fires in folds 2, 4 and 5 (about 5 minutes on the CPU backend),
# zoomed onto the entry point with every metrics series; the same as seen with deuteranopia.
"${NANSCOPE_BUILD_DIR:-$root/build}/cli/nanscope-run" --backend cpu --guard --set halt.on_fire=never \
  --inject slot:aux_pred_nb@2:150 --inject slot:c51_loss@4:260:posinf --inject slot:32@5:90:neginf \
  --out "$tmp/six" --quiet || true
shot "$tmp/six/run.h5" --screenshot "$root/docs/screenshot-zoomed.png" --screenshot-after steps:0 \
  --screenshot-view zoom-entry,all-series
shot "$tmp/six/run.h5" --screenshot "$root/docs/screenshot-deuteranopia.png" --screenshot-after steps:0 \
  --screenshot-view zoom-entry --screenshot-simulate deuteranopia
# lr-explosion with watch.absmax=1e6: warned cells a step before the fire, step compare naming the
# slots that grew (the state view), and the magnitude view of the same fold.
"${NANSCOPE_BUILD_DIR:-$root/build}/cli/nanscope-run" --backend cpu --scenario lr-explosion --folds 1 \
  --steps-per-fold 12 --set watch.absmax=1e6 --set halt.on_fire=never --out "$tmp/lrx" --quiet || true
shot "$tmp/lrx/run.h5" --screenshot "$root/docs/screenshot-compare.png" --screenshot-after steps:0 \
  --screenshot-view compare
shot "$tmp/lrx/run.h5" --screenshot "$root/docs/screenshot-magnitude.png" --screenshot-after steps:0 \
  --screenshot-view magnitude,compare
# Slot health beside the losses (h_s2's largest finite value, params' non-finite count, log scale)
# and the Slots table filtered to the h_ slots, h_s2 selected at its last finite step.
shot "$tmp/lrx/run.h5" --screenshot "$root/docs/screenshot-tools.png" --screenshot-after steps:0 \
  --screenshot-view log,health=h_s2:absmax,health=params:nonfinite,filter=h_ --screenshot-select 0:1:h_s2
# A sweep of four variants x two seeds on this machine (docs/sweeps.md): the sweep view, sorted
# by first fire.
cat > "$tmp/sweep.toml" <<'SPEC'
[sweep]
name = "demo"
seeds = [1, 2]
backend = "cpu"
set = ["run.folds=4", "run.steps_per_fold=30", "model.batch=32", "model.hidden=32", "halt.on_fire=never"]
[[variant]]
name = "lr-explosion"
scenario = "lr-explosion"
[[variant]]
name = "bad-bar"
inject = ["slot:batch@2:11"]
[[variant]]
name = "watched"
set = ["watch.grad_explode=0.1"]
[[variant]]
name = "healthy"
SPEC
"${NANSCOPE_BUILD_DIR:-$root/build}/cli/nanscope-run" sweep "$tmp/sweep.toml" --out "$tmp/sweep" --quiet || true
shot "$tmp/sweep" --screenshot "$root/docs/screenshot-sweep.png" --screenshot-after steps:0 \
  --screenshot-view sweep-sorted
# Time travel: the default run's fold 0, h_s2 at step 249 (150 steps before the fold's end),
# recomputed from the checkpoint at step 200.
shot --screenshot "$root/docs/screenshot-time-travel.png" --screenshot-after steps:400 \
  --screenshot-select 0:249:h_s2
shot --screenshot "$root/docs/screenshot-help.png" --screenshot-after steps:40 --screenshot-view help-menu
# The aux group's learning rate 100x too high: grad_explode trips for two groups at one step of
# fold 0 (told apart in the Events dock's detail), an injected NaN fires in fold 1.
"${NANSCOPE_BUILD_DIR:-$root/build}/cli/nanscope-run" --backend cpu --folds 2 --steps-per-fold 30 \
  --set optim.lr_mult.aux=100 --set watch.grad_explode=5 --set halt.on_fire=never \
  --inject slot:h_s2@1:20 --out "$tmp/watch" --quiet || true
shot "$tmp/watch/run.h5" --screenshot "$root/docs/screenshot-watch.png" --screenshot-after steps:0 \
  --screenshot-view events
ls -la "$root"/docs/screenshot-*.png
