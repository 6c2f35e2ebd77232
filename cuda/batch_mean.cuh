// A batch mean in one block, shared by mean_into (forward_losses.cu) and the IQN tail's last block
// (iqn_head.cu), so both fold the same way.
#pragma once

#include "reduce.cuh"

namespace nanscope::cuda {

// *out = scale * mean(x[0..n)) by a block of kMeanThreads: each thread's strided sum in double,
// then a fixed tree. The loads bypass L1 (x may have been written by other blocks of the launch).
constexpr int kMeanThreads = 256;
__device__ __forceinline__ void mean_block(const float* __restrict__ x, int n, double scale,
                                           double* __restrict__ out) {
  double acc = 0;
  for (int i = threadIdx.x; i < n; i += kMeanThreads) acc += __ldcg(x + i);
  const double sum = block_sum<kMeanThreads>(acc);
  if (threadIdx.x == 0) *out = scale * (sum / n);
}

}  // namespace nanscope::cuda
