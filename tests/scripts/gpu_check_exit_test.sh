#!/usr/bin/env bash
# scripts/gpu-check.sh reports a failing part: with stand-in programs (a gpu_tests that fails, one
# that passes) it must exit 1 and end with "gpu-check: FAIL: gpu_tests (exit 1)", or exit 0 and end
# with "gpu-check: PASS". Usage: gpu_check_exit_test.sh SOURCE_DIR
set -uo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/fail/lib" "$work/pass/lib"
printf '#!/bin/sh\necho "[  FAILED  ] 1 test, listed below:"\nexit 1\n' >"$work/fail/gpu_tests"
printf '#!/bin/sh\necho "[  PASSED  ] 3 tests."\nexit 0\n' >"$work/pass/gpu_tests"
chmod +x "$work/fail/gpu_tests" "$work/pass/gpu_tests"
status=0
"$src/scripts/gpu-check.sh" "$work/fail" "$work/out-fail" tests >"$work/fail.log" 2>&1
code=$?
last=$(tail -1 "$work/fail.log")
if [ $code -ne 1 ] || [ "$last" != "gpu-check: FAIL: gpu_tests (exit 1)" ]; then
  echo "gpu_check_exit_test: a failing gpu_tests gave exit $code and '$last'" >&2
  status=1
fi
"$src/scripts/gpu-check.sh" "$work/pass" "$work/out-pass" tests >"$work/pass.log" 2>&1
code=$?
last=$(tail -1 "$work/pass.log")
if [ $code -ne 0 ] || [[ "$last" != "gpu-check: PASS (1 steps, parts tests)" ]]; then
  echo "gpu_check_exit_test: a passing gpu_tests gave exit $code and '$last'" >&2
  status=1
fi
[ $status -eq 0 ] && echo "gpu_check_exit_test: a failing part fails the script (exit 1, FAIL line), a passing run passes"
exit $status
