#!/usr/bin/env bash
# Runs nanscope's GPU checks and benchmarks on a machine with a CUDA device, from a directory that
# holds the built binaries (gpu_tests, twin_fixture, bench_cuda_step, bench_sentinel) and their
# shared libraries in lib/. Writes every output into OUT_DIR and prints a summary:
#   the GPU tests; compute-sanitizer memcheck and initcheck on the tiny-network tests, racecheck on a
#   subset that covers every kernel in every mode; the step benchmark (graphed and ungraphed); the
#   sentinel benchmark with its PyTorch peer; the PyTorch twin against the CUDA backend, with timing.
# Usage: scripts/gpu-check.sh BIN_DIR OUT_DIR   (run from the source tree; PyTorch is optional)
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
step() {  # NAME SECONDS COMMAND...
  local name=$1 secs=$2
  shift 2
  timeout "$secs" "$@" >"$out/$name.txt" 2>&1
  echo "$name: exit $?"
}
tiny='Injections*:CudaGuard*:CudaGraph.Recaptured*'
race='Injections/Parity.SameSentinelsOnCudaAsOnCpu/aux_param:Injections/Parity.SameSentinelsOnCudaAsOnCpu/h_s1_all:Injections/Parity.GraphModeGivesTheUngraphedSentinels/iqn_param:Injections/Parity.GraphModeGivesTheUngraphedSentinels/guard:Injections/Parity.FoldEndReadbackGivesThePerStepReadback/bn_d_concat:CudaGraph.Recaptured*:CudaGuard*'
step gpu_tests 300 "$bin/gpu_tests"
grep -E "^\[  (PASSED|FAILED)" "$out/gpu_tests.txt"
step memcheck 300 compute-sanitizer --tool memcheck "$bin/gpu_tests" --gtest_filter="$tiny"
step initcheck 300 compute-sanitizer --tool initcheck "$bin/gpu_tests" --gtest_filter="$tiny"
step racecheck 400 compute-sanitizer --tool racecheck "$bin/gpu_tests" --gtest_filter="$race"
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$out"/memcheck.txt "$out"/initcheck.txt "$out"/racecheck.txt
step cuda_step 300 "$bin/bench_cuda_step" 5
step sentinel 120 "$bin/bench_sentinel" "$out/sentinel_shapes.txt"
if python3 -c "import torch, h5py" 2>/dev/null; then
  step torch_amp_check 120 python3 "$src/bench/torch_amp_check.py" "$out/sentinel_shapes.txt"
  step twin_fixture 120 "$bin/twin_fixture" "$out/twin_fixture.h5" cuda 3
  step torch_twin 300 python3 "$src/bench/torch_twin.py" "$out/twin_fixture.h5" --time
  tail -3 "$out/torch_twin.txt"
else
  echo "PyTorch not importable: torch_amp_check and torch_twin skipped"
fi
