#!/usr/bin/env bash
# The sanitizer and fuzz part of .ci/run: builds the engine, the unit tests and the libFuzzer
# harnesses with clang, AddressSanitizer and UndefinedBehaviorSanitizer (CPU only, no GUI) into
# build-sanitize/, runs the unit tests there, then each harness on its corpus for
# NANSCOPE_FUZZ_SECONDS (default 60) seconds from seed NANSCOPE_FUZZ_SEED (default 1). A crash a
# harness finds is written to tests/fuzz/found/ and fails the script; keep it as a regression
# input (tests/fuzz/regressions).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${NANSCOPE_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
seconds=${NANSCOPE_FUZZ_SECONDS:-60}
# A fixed seed by default: the same mutations in the same order on every run, so a crash CI finds
# is found again by the same command here; a longer campaign sets its own (bench/NOTES.md).
seed=${NANSCOPE_FUZZ_SEED:-1}
say() { printf 'sanitize-and-fuzz: %s\n' "$*" >&2; }

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  say "installing clang and its sanitizer runtimes"
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y --no-install-recommends clang libclang-rt-14-dev ||
    { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y --no-install-recommends clang libclang-rt-14-dev; }
fi

if [ ! -f "$build/build.ninja" ]; then
  say "configuring $build"
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNANSCOPE_CUDA=OFF \
    -DNANSCOPE_GUI=OFF -DNANSCOPE_BENCH=OFF -DNANSCOPE_SANITIZE=ON -DNANSCOPE_FUZZ=ON >&2
fi
say "building"
cmake --build "$build" -j "$(nproc)" >&2

say "unit tests under ASan+UBSan"
# libhdf5 on the corrupt files the tests feed it (refused, the library not instrumented): its own
# overlapping copies are not nanscope's to report (replace_intrin=0), and it asks malloc for sizes
# read from corrupt metadata and handles the NULL (allocator_may_return_null=1).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:replace_intrin=0:allocator_may_return_null=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp"
(cd "$build" && ctest --output-on-failure -j "$(nproc)" -E 'twin.torch|gpu.tests')

# The harnesses check copies too (replace_intrin=1): the HDF5 ones read each file in a contained
# child first, which reports libhdf5's overlapping copies as its faults (tests/fuzz/hdf5_fuzz.h).
export ASAN_OPTIONS="${ASAN_OPTIONS/replace_intrin=0/replace_intrin=1}"
found="$root/tests/fuzz/found"
mkdir -p "$found"
status=0
for name in csv config run_file dump sweep_spec sdk_api; do
  work=$(mktemp -d)
  cp "$root/tests/fuzz/corpus/$name/"* "$work/"
  [ -d "$root/tests/fuzz/regressions/$name" ] && cp "$root/tests/fuzz/regressions/$name/"* "$work/" 2>/dev/null || true
  say "fuzzing $name for ${seconds}s (seed $seed)"
  if ! (cd "$work" && "$build/tests/fuzz/fuzz_$name" -seed="$seed" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
          -max_len=262144 -artifact_prefix="$found/${name}-" -print_final_stats=1 "$work" 2>"$work.log"); then
    say "fuzz_$name found a crash: see $found"
    # The first report in full (a contained child's comes before the harness's abort), then the end.
    { sed -n '/ERROR: \|runtime error\|CHECK failed/,$p' "$work.log" | head -150; tail -20 "$work.log"; } >&2 || true
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work.log" | sed "s/^/fuzz_$name: /" >&2 || true
  rm -rf "$work" "$work.log"
done
exit $status
