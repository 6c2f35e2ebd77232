// Device helpers for kernels that give one warp a short row (a head's atoms, a sample's branches):
// enough lanes in flight to hide memory latency where one thread per row leaves most of the GPU
// idle. Lane-strided partial sums are folded by reduce.cuh's warp reduction, so a result does not
// depend on scheduling. Every lane of a full warp calls them and gets the result.
#pragma once

#include "reduce.cuh"

namespace nanscope::cuda {

// log(sum(exp(x))) over x[0..n) with the max shifted out (in double), NaN if any value is NaN, and
// +Inf/-Inf as the one-thread form gives them (an infinite max is not shifted out).
__device__ __forceinline__ float lse_row_warp(const float* __restrict__ x, int n) {
  const int lane = threadIdx.x % 32;
  bool nan = false;
  float m = x[0];
  for (int i = lane; i < n; i += 32) {
    nan = nan || isnan(x[i]);
    m = x[i] > m ? x[i] : m;
  }
  if (__any_sync(0xffffffffu, nan)) return __int_as_float(0x7fc00000);
  m = warp_reduce(m, MaxOf());
  const float shift = isinf(m) ? 0.f : m;
  double s = 0;
  for (int i = lane; i < n; i += 32) s += exp(static_cast<double>(x[i] - shift));
  s = warp_sum_double(s);
  return static_cast<float>(static_cast<double>(shift) + log(s));
}

}  // namespace nanscope::cuda
