// The device reductions, every one through CUB's WarpReduce and BlockReduce (warp shuffles, then
// the warps in order): for a fixed warp or block size each combines the same values in the same
// order at every launch, with no atomics, so a result never depends on scheduling. The operators
// are the merges of the values they fold: sums, maxima, kinds and counts (health_reduce.cuh: the
// health sums).
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

#include "core/slot_health.h"

namespace nanscope::cuda {

struct Plus {
  template <class T>
  __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
struct MaxOf {  // for values without NaN (a NaN is found before, as in lse_row_warp)
  __device__ __forceinline__ float operator()(float a, float b) const { return b > a ? b : a; }
};

// The reduction of a full warp's `v` by `op`; every lane gets it (lane 0's result, broadcast).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  using Reduce = cub::WarpReduce<T>;
  __shared__ typename Reduce::TempStorage temp[32];  // one per warp of a block of up to 1024
  const T lane0 = Reduce(temp[threadIdx.x / 32]).Reduce(v, op);
  return cub::ShuffleIndex<32>(lane0, 0, 0xffffffffu);
}

__device__ __forceinline__ double warp_sum_double(double v) {
  return warp_reduce(v, Plus());
}

// The reduction of a block of kThreads threads' `v` by `op`: every thread calls it; thread 0 gets
// the result. Its shared storage is reused by the next call in the kernel after a barrier.
template <int kThreads, class T, class Op>
__device__ __forceinline__ T block_reduce(T v, Op op) {
  using Reduce = cub::BlockReduce<T, kThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
  __shared__ typename Reduce::TempStorage temp;
  __syncthreads();  // an earlier call's readers are done with `temp`
  return Reduce(temp).Reduce(v, op);
}

template <int kThreads>
__device__ __forceinline__ double block_sum(double v) {
  return block_reduce<kThreads>(v, Plus());
}

}  // namespace nanscope::cuda
