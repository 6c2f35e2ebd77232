#!/usr/bin/env bash
# The nanscope package on a machine without CUDA, as a laptop that opens a GPU server's run files
# has it: builds both packages (cpack), installs nanscope with apt, hides every /usr/local/cuda*
# in a private mount namespace and runs the installed programs there:
#   nanscope-run --version; a small default run (it must say it is on the CPU, and why);
#   --backend cuda (exit 69, the reason); the workbench offscreen on the run's file
#   (--state-json shows the file's grids); the SDK: the C example built against the installed
#   package (find_package(nanscope), pkg-config), the Python and the Rust ones, their run files read back;
#   nanscope.torch's tests (tests/torch) on the installed package with Debian's python3-torch;
# then the nanscope-cuda plugin unpacked beside it, whose cuBLAS is hidden too (the reason names
# the missing library). Also checks readelf -d of every installed ELF file. Needs root (apt,
# unshare -m); removes the package at the end. Usage: installed_without_cuda.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
cleanup() {
  dpkg-query -W -f='${Status}' nanscope 2>/dev/null | grep -q 'install ok installed' &&
    apt-get remove -y nanscope >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "installed_without_cuda: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/debs" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/debs/nanscope_*.deb)
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "$deb" >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; fail "apt-get install $deb failed"; }

# readelf -d: no installed ELF file of the package needs CUDA or looks into a toolkit.
mapfile -t elves < <(dpkg -L nanscope | while read -r f; do [ -f "$f" ] && head -c4 "$f" | grep -q ELF && echo "$f"; done)
[ ${#elves[@]} -ge 2 ] || fail "the package installs ${#elves[@]} ELF files, expected nanscope and nanscope-run"
"$here/no_cuda_link.sh" "${elves[@]}"

cuda_plugin_root="$work/cuda-root"
if ls "$work"/debs/nanscope-cuda_*.deb >/dev/null 2>&1; then
  dpkg-deb -x "$(ls "$work"/debs/nanscope-cuda_*.deb)" "$cuda_plugin_root"
fi

# Everything below runs with /usr/local/cuda* hidden: each real folder under a tmpfs.
cat >"$work/hidden.sh" <<'INNER'
set -euo pipefail
for d in /usr/local/cuda*; do
  [ -d "$d" ] && [ ! -L "$d" ] && mount -t tmpfs none "$d"
done
if ls /usr/local/cuda*/lib64/libcudart.so* >/dev/null 2>&1; then echo "the toolkit is still visible" >&2; exit 1; fi
cd "$WORK"
fail() { echo "installed_without_cuda (CUDA hidden): $*" >&2; exit 1; }
small="--folds 1 --steps-per-fold 3 --set data.bars=400 --set model.batch=8 --set model.hidden=16 --set model.bottleneck=8 --set model.iqn_n=4 --set model.iqn_n_target=4 --set model.iqn_k=4 --set model.iqn_cos=8 --set model.aux_hidden=8"

version=$(/usr/bin/nanscope-run --version) || fail "nanscope-run --version exits $?"
grep -q "0\.[0-9]" <<<"$version" || fail "nanscope-run --version printed '$version'"

/usr/bin/nanscope-run --out run $small >run.out 2>run.err || fail "the default run exits $?: $(cat run.err)"
grep -q "^nanscope: backend auto -> cpu (no CUDA plugin (libnanscope-cuda.so not found" run.err ||
  fail "the run does not say it is on the CPU and why: $(cat run.err)"
[ -f run/run.h5 ] || fail "the run wrote no run/run.h5"

set +e
/usr/bin/nanscope-run --backend cuda $small >cuda.out 2>cuda.err
code=$?
set -e
[ $code -eq 69 ] || fail "--backend cuda exits $code, not 69: $(cat cuda.err)"
grep -q "backend cuda: no CUDA plugin" cuda.err || fail "--backend cuda gives no reason: $(cat cuda.err)"

QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=$WORK timeout 120 /usr/bin/nanscope run/run.h5 \
  --screenshot shot.png --state-json state.json >gui.log 2>&1 || fail "the workbench exits $?: $(cat gui.log)"
python3 - state.json "$(/usr/bin/nanscope-run --list-slots | wc -l)" <<'PY' || fail "the workbench's state does not show the run file's grids"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["mode"] == "offline", s["mode"]
assert s["source"].endswith("run/run.h5"), s["source"]
assert len(s["folds"]) == 1 and len(s["folds"][0]["slots"]) == int(sys.argv[2]), "grid size"
states = {slot["state"] for slot in s["folds"][0]["slots"]}
assert "clean" in states, states
PY

# The SDK as a stranger's trainer uses it: the C example from the package's docs built against
# the installed header and library with find_package(nanscope) and with pkg-config, run with its
# bug; the Python example on the installed library; the installed programs read what they wrote.
examples=/usr/share/doc/nanscope/examples
[ -f /usr/include/nanscope/nanscope.h ] || fail "no /usr/include/nanscope/nanscope.h"
cp -r "$examples/c_mlp" sdk_src
cmake -S sdk_src -B sdk_build -G Ninja >sdk_cmake.log 2>&1 || fail "find_package(nanscope) build: $(tail -20 sdk_cmake.log)"
cmake --build sdk_build >>sdk_cmake.log 2>&1 || fail "the C example does not build: $(tail -20 sdk_cmake.log)"
grep -q "nanscope::nanscope\|libnanscope" sdk_build/build.ninja || fail "the example did not link the installed nanscope::nanscope"
sdk_build/c_mlp sdk_run --bug >sdk_run.out 2>&1 || fail "the C example exits $?: $(cat sdk_run.out)"
grep -q "^fold 1: .*entry slot 1 at step 20" sdk_run.out || fail "the C example's bug was not found: $(cat sdk_run.out)"
/usr/bin/nanscope-run validate sdk_run/run.h5 || fail "nanscope-run validate refuses the SDK's run file"
/usr/bin/nanscope-run compare sdk_run/run.h5 --fold 1 --json >sdk_compare.json || fail "compare refuses the SDK's run file"
cc -std=c99 -O2 sdk_src/mlp.c -o c_mlp_pc $(pkg-config --cflags --libs nanscope) -lm || fail "pkg-config build failed"
./c_mlp_pc sdk_run_pc >sdk_pc.out 2>&1 || fail "the pkg-config build exits $?: $(cat sdk_pc.out)"
grep -q "^fold 1: .*clean" sdk_pc.out || fail "the C example without its bug fired: $(cat sdk_pc.out)"
# nanscope.sdk for the system's Python 3, finding the installed libnanscope by itself.
(cd / && env -u PYTHONPATH /usr/bin/python3 -c "import nanscope.sdk as ns; ns.load(); import nanscope.torch") ||
  fail "python3 cannot import nanscope.sdk and nanscope.torch from the package, or finds no libnanscope"
# nanscope.torch's own tests against the installed package, with Debian's python3-torch.
(cd / && env -u PYTHONPATH /usr/bin/python3 "$SOURCE/tests/torch/watch_test.py" --installed) \
  >torch_watch.out 2>&1 || fail "tests/torch/watch_test.py on the installed package: $(tail -5 torch_watch.out)"
(cd / && env -u PYTHONPATH /usr/bin/python3 "$SOURCE/tests/torch/transformer_test.py" --installed "$SOURCE") \
  >torch_transformer.out 2>&1 ||
  fail "tests/torch/transformer_test.py on the installed package: $(tail -5 torch_transformer.out)"
(cd / && env -u PYTHONPATH /usr/bin/python3 "$SOURCE/tests/torch/precision_test.py" --installed "$SOURCE") \
  >torch_precision.out 2>&1 ||
  fail "tests/torch/precision_test.py on the installed package: $(tail -5 torch_precision.out)"
(cd "$examples/python" && /usr/bin/python3 train_numpy.py "$WORK/sdk_py" --bug) >sdk_py.out 2>&1 ||
  fail "the Python example on the installed library exits $?: $(cat sdk_py.out)"
grep -q "^fold 2: .*entry slot 3 at step 15" sdk_py.out || fail "the Python example's bug was not found: $(cat sdk_py.out)"
# The Rust example on the installed library: Debian's cargo, offline (the crate has no
# dependency), no NANSCOPE_LIB_DIR, so the linker finds the installed libnanscope.
cp -r "$examples/rust" rust_src
CARGO_TARGET_DIR=$WORK/rust_target CARGO_HOME=$WORK/cargo_home PATH=/usr/bin:/bin \
  /usr/bin/cargo build --release --offline --quiet --manifest-path rust_src/Cargo.toml \
  >rust_build.log 2>&1 || fail "the Rust example does not build on the installed library: $(tail -20 rust_build.log)"
"$WORK/rust_target/release/rust_trainer" "$WORK/sdk_rust" --bug >sdk_rust.out 2>&1 ||
  fail "the Rust example on the installed library exits $?: $(cat sdk_rust.out)"
grep -q "^fold 1: .*entry slot 3 at step 10" sdk_rust.out || fail "the Rust example's bug was not found: $(cat sdk_rust.out)"
QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=$WORK timeout 120 /usr/bin/nanscope sdk_run/run.h5 \
  --screenshot sdk_shot.png --state-json sdk_state.json >sdk_gui.log 2>&1 || fail "the workbench exits $? on the SDK's run: $(cat sdk_gui.log)"
python3 - sdk_state.json <<'PY' || fail "the workbench does not show the SDK run's entry"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["entry_frames"] == [{"fold": 1, "slot": 1, "step": 20}], s["entry_frames"]
assert len(s["folds"]) == 3
PY

# The plugin unpacked from nanscope-cuda, its cuBLAS hidden with the toolkit: refused, named.
if [ -d "$PLUGIN_ROOT" ]; then
  plugin=$PLUGIN_ROOT/usr/lib/nanscope/libnanscope-cuda.so
  [ -f "$plugin" ] || fail "nanscope-cuda holds no usr/lib/nanscope/libnanscope-cuda.so"
  NANSCOPE_CUDA_PLUGIN=$plugin /usr/bin/nanscope-run $small >p.out 2>p.err || fail "auto with the plugin's libraries hidden exits $?"
  grep -q "backend auto -> cpu (the CUDA plugin $plugin cannot be loaded: libcublas" p.err ||
    fail "auto does not name the missing library: $(cat p.err)"
  set +e
  NANSCOPE_CUDA_PLUGIN=$plugin /usr/bin/nanscope-run --backend cuda $small >pc.out 2>pc.err
  code=$?
  set -e
  [ $code -eq 69 ] || fail "--backend cuda with the plugin's libraries hidden exits $code"
  grep -q "libcublas" pc.err || fail "--backend cuda does not name the missing library: $(cat pc.err)"
fi
echo "installed_without_cuda: with CUDA hidden, the installed nanscope runs on the CPU, refuses --backend cuda with 69 and opens its run file offscreen; the SDK's C example builds against it with find_package and pkg-config and, like the Python and Rust ones, finds its bug; nanscope.torch's tests pass on it$( [ -d "$PLUGIN_ROOT" ] && echo "; the unpacked plugin is refused for its missing cuBLAS")"
INNER
WORK=$work PLUGIN_ROOT=$cuda_plugin_root SOURCE=$source unshare -m bash "$work/hidden.sh"
