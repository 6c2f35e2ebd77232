#!/usr/bin/env bash
# Runs nanscope's GPU checks and benchmarks on a machine with a CUDA device, from a directory that
# holds the built binaries (gpu_tests, nanscope-run, twin_fixture, bench_cuda_step, bench_sentinel,
# bench_time_travel, bench_layer_gemm) and their
# shared libraries in lib/. Writes every output into OUT_DIR and prints a summary:
#   the GPU tests; the slot consumers' check through nanscope-run, graphed and ungraphed
#   (tests/io/check_propagation.py); compute-sanitizer memcheck and initcheck on tiny-network tests that run every
#   kernel in every mode (the fused check, first-fire capture graphed and not, the guard, recapture,
#   parity runs), racecheck on those with shared memory (fused check, guard, a graphed parity run);
#   the step benchmark (sentinel_overhead, graphed and ungraphed, recording; the step graph's shape,
#   with its side lanes and on one stream; where its time goes, node by node; where the checks'
#   cost is); the step's dense layers, cuBLAS against the fused layer kernel; the sentinel benchmark
#   (sentinel_big, sentinel_set) with its PyTorch peer; the PyTorch twin against the CUDA backend
#   with step_rate; the SDK's device path (sdk_device_tests: eager and graphed trainers through
#   libnanscope, the session's table and files, a session of a thousand device slots; with bench,
#   bench_sdk_device_check over the sentinel bench's buffers and bench_sdk_run_file_device, the
#   run file's budget at 1,000 device slots); the sentinel bench's sentinel_many (4,096 slots in one
#   launch of one graph); with the part `scaling`
#   (not in the default), the scaling table (bench/step_scaling.py: batch 64-4096 x hidden
#   128-2048 against cuBLAS SGEMM and the twin).
# Usage: scripts/gpu-check.sh BIN_DIR OUT_DIR [PARTS]   (run from the source tree; PyTorch is optional)
# PARTS: a comma-separated choice of tests, propagation, sanitizers, sdk, torch, bench, scaling
# (default the first six). torch: nanscope.torch on examples/python/train_transformer.py on the
# device, eager and under torch.cuda.graph with the graphed run files equal to the eager ones
# (tests/torch/transformer_test.py --device cuda), the example in bfloat16 and float16 with
# GradScaler (tests/torch/precision_test.py --device cuda), the graphed example under memcheck and, where
# transformers is installed, its cost on GPT-2 against the unwatched step (eager and graphed),
# detect_anomaly and DebugUnderflowOverflow, with an injected NaN named and its run file kept in
# OUT_DIR/gpt2_run for the workbench (bench/torch_watch_cost.py). The SDK's binaries (sdk_device_tests, bench_sdk_device_check) find the CUDA plugin as
# a trainer does, or through NANSCOPE_CUDA_PLUGIN. On the H200: tests and bench about a minute each, the sanitizers under one more, scaling one.
# Exits non-zero when any part fails (a test, the propagation check, a sanitizer error or hazard, a
# bench that did not run or failed) and ends with one line: "gpu-check: PASS ..." or
# "gpu-check: FAIL: <the steps that failed>".
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
parts=${3:-tests,propagation,sanitizers,sdk,torch,bench}
want() { [[ ",$parts," == *",$1,"* ]]; }
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
failed=()
ran=0
step() {  # NAME SECONDS COMMAND...
  local name=$1 secs=$2 code
  shift 2
  timeout "$secs" "$@" >"$out/$name.txt" 2>&1
  code=$?
  echo "$name: exit $code"
  ran=$((ran + 1))
  [ $code -eq 0 ] || failed+=("$name (exit $code)")
}
summary() {
  if [ ${#failed[@]} -eq 0 ]; then
    echo "gpu-check: PASS ($ran steps, parts $parts)"
    exit 0
  fi
  local IFS=';'
  echo "gpu-check: FAIL: ${failed[*]}"
  exit 1
}
tiny='DeviceSentinel*:Types/HalfDevice.*:WideBank.EverySlot*:CudaStepGraph*:CudaCapture*:CudaGuard*:CudaGraph.Recaptured*:Injections/Parity.SameSentinelsOnCudaAsOnCpu/iqn_phi_param:Injections/Parity.SameSentinelsOnCudaAsOnCpu/params_slot:Injections/Parity.SameSentinelsOnCudaAsOnCpu/aux_param:Injections/Parity.SameSentinelsOnCudaAsOnCpu/bn_d_concat:Injections/Parity.GraphModeGivesTheUngraphedSentinels/iqn_param:Injections/Parity.FoldEndReadbackGivesThePerStepReadback/guard:CudaTimeTravel.CheckpointsStayOnTheDevice'
race='DeviceSentinel.Fused*:CudaGuard*:Injections/Parity.GraphModeGivesTheUngraphedSentinels/iqn_param'
if want tests; then
step gpu_tests 300 "$bin/gpu_tests"
grep -E "^\[  (PASSED|FAILED)" "$out/gpu_tests.txt"
fi
if want propagation; then
for g in on off; do
  step "propagation_graph_$g" 300 python3 "$src/tests/io/check_propagation.py" "$bin/nanscope-run" "$src" \
    --backend cuda --graph "$g"
  cat "$out/propagation_graph_$g.txt"
done
fi
if want sanitizers; then
step memcheck 200 compute-sanitizer --error-exitcode 1 --tool memcheck "$bin/gpu_tests" --gtest_filter="$tiny"
step initcheck 180 compute-sanitizer --error-exitcode 1 --tool initcheck "$bin/gpu_tests" --gtest_filter="$tiny"
step racecheck 300 compute-sanitizer --error-exitcode 1 --tool racecheck "$bin/gpu_tests" --gtest_filter="$race"
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$out"/memcheck.txt "$out"/initcheck.txt "$out"/racecheck.txt
fi
if want sdk; then
step sdk_device_tests 300 "$bin/sdk_device_tests"
grep -E "^\[  (PASSED|FAILED)" "$out/sdk_device_tests.txt"
fi
if want torch; then  # nanscope.torch on the transformer example on the device (PyTorch needed)
if python3 -c "import torch, h5py" 2>/dev/null; then
  step torch_transformer 600 python3 "$src/tests/torch/transformer_test.py" --device cuda \
    --lib "$bin/lib/libnanscope.so.1" --run-tool "$bin/nanscope-run" "$src"
  tail -1 "$out/torch_transformer.txt"
  # Reduced precision on the device: float16 scores past 65504 under autocast and GradScaler (the
  # margin watch first, then the fire, the scaler's skip), the bfloat16 gradient through Adam.
  step torch_precision 300 python3 "$src/tests/torch/precision_test.py" --device cuda \
    --lib "$bin/lib/libnanscope.so.1" "$src"
  tail -4 "$out/torch_precision.txt"
  if python3 -c "import transformers" 2>/dev/null; then  # GPT-2: the cost and the named entry
    step torch_watch_cost 600 env PYTHONPATH="$src/python" python3 "$src/bench/torch_watch_cost.py" \
      --lib "$bin/lib/libnanscope.so.1" --keep "$out/gpt2_run"
    grep -E "^(plain|nanscope|plain_graphed|nanscope_graphed|detect_anomaly|debug_underflow_overflow|torch_watch_cost):" \
      "$out/torch_watch_cost.txt"
  fi
  # The graphed example under memcheck: the watch's checks inside torch's graph, replayed.
  step torch_graph_memcheck 300 env PYTHONPATH="$src/python" CUBLAS_WORKSPACE_CONFIG=:4096:8 \
    compute-sanitizer --error-exitcode 1 --tool memcheck python3 \
    "$src/examples/python/train_transformer.py" "$out/graph_memcheck_run" --device cuda --graph \
    --bug-layernorm --folds 1 --steps 6 --lib "$bin/lib/libnanscope.so.1"
  grep -hE "ERROR SUMMARY|^fold" "$out/torch_graph_memcheck.txt"
else
  failed+=("torch_transformer (no torch or h5py in python3)")
fi
fi
if want scaling; then
step scaling 600 python3 "$src/bench/step_scaling.py" "$bin" "$out/scaling"
sed -n '/^scaling:/,$p' "$out/scaling.txt"
fi
want bench || summary
step cuda_step 300 "$bin/bench_cuda_step" 5 "$out/step_ms.txt"
grep -hE "sentinel_overhead|health_overhead|graph vs ungraphed|^  graph|^step graph" "$out/cuda_step.txt"
NANSCOPE_STEP_LANES=0 "$bin/bench_cuda_step" shape | tail -1
step cuda_step_critical 120 "$bin/bench_cuda_step" critical
head -1 "$out/cuda_step_critical.txt"
step cuda_step_split 300 "$bin/bench_cuda_step" split
cat "$out/cuda_step_split.txt"
step layer_gemm 120 "$bin/bench_layer_gemm"
cat "$out/layer_gemm.txt"
step time_travel 300 "$bin/bench_time_travel" cuda
cat "$out/time_travel.txt"
step sentinel 120 "$bin/bench_sentinel" "$out/sentinel_shapes.txt"
grep -hE "^sentinel_" "$out/sentinel.txt"
if want sdk; then  # over the buffers whose shapes the sentinel bench wrote
  step sdk_device_check 120 "$bin/bench_sdk_device_check" "$out/sentinel_shapes.txt"
  tail -3 "$out/sdk_device_check.txt"
  # The run file's budget on the device: 1,000 device slots, health on, 10,000 steps.
  step sdk_run_file_device 300 "$bin/bench_sdk_run_file_device" 1000 64 10000 1000
  cat "$out/sdk_run_file_device.txt"
fi
if python3 -c "import torch, h5py" 2>/dev/null; then
  step torch_amp_check 120 python3 "$src/bench/torch_amp_check.py" "$out/sentinel_shapes.txt"
  step twin_fixture 120 "$bin/twin_fixture" "$out/twin_fixture.h5" cuda 3
  step torch_twin 300 python3 "$src/bench/torch_twin.py" "$out/twin_fixture.h5" --time --nanscope-step "$out/step_ms.txt"
  grep -h "^sentinel_set" "$out/torch_amp_check.txt"
  tail -4 "$out/torch_twin.txt"
else
  echo "PyTorch not importable: torch_amp_check and torch_twin did not run"
  failed+=("torch peers (PyTorch not importable)")
fi
summary
