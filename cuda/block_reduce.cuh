// A block-wide reduction by a fixed shared-memory tree: the same combinations in the same order at
// every launch, so a result never depends on scheduling (no atomics). The kernels that fold a
// buffer into one double (the loss means, the CQL term, the gradient norms' chunks) and the
// two-pass check's partials all use it. Every thread of a block of kThreads threads must call it;
// every thread gets the result.
#pragma once

namespace nanscope::cuda {

template <int kThreads, class T, class Combine>
__device__ __forceinline__ T block_reduce(T v, Combine combine) {
  static_assert((kThreads & (kThreads - 1)) == 0, "the tree halves a power of two");
  __shared__ T sh[kThreads];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) combine(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  return sh[0];
}

template <int kThreads>
__device__ __forceinline__ double block_sum(double v) {
  return block_reduce<kThreads>(v, [](double& a, const double& b) { a += b; });
}

}  // namespace nanscope::cuda
