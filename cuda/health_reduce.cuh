// How the fused check (sentinel_check.cu) measures slot health (core/slot_health.h) without float
// atomics. Each block sums its values (a thread's share, then reduce.cuh's block reduction with
// HealthSums' merge), leaves the block's partial and counts its arrival; the last block to arrive
// folds the partials (thread t takes partials t, t + blockDim, ... in order, then the block's
// reduction) and writes the slot's row. Fixed orders throughout and no float atomics: the same row
// on every run.
#pragma once

#include "core/slot_health.h"
#include "reduce.cuh"
#include "slot_note.cuh"

namespace nanscope::cuda {

// A block's sums as the reduction carries them: HealthSums' fields in the widths one launch needs
// (a float buffer's range in float, counts of one check below 2^31 in 32 bits), so that two of
// them fit a thread's registers while they merge; widened into HealthSums to write the row.
struct DeviceHealthSums {
  float lo = INFINITY, hi = -INFINITY, least_nonzero = INFINITY;
  double sum = 0, sumsq = 0;
  unsigned finite = 0u, nonfinite = 0u, zeros = 0u, subnormal = 0u;
  __device__ __forceinline__ void merge(const DeviceHealthSums& o) {
    lo = fminf(lo, o.lo);
    hi = fmaxf(hi, o.hi);
    least_nonzero = fminf(least_nonzero, o.least_nonzero);
    sum += o.sum;
    sumsq += o.sumsq;
    finite += o.finite;
    nonfinite += o.nonfinite;
    zeros += o.zeros;
    subnormal += o.subnormal;
  }
  __device__ __forceinline__ HealthSums widened() const {
    HealthSums h;
    h.lo = lo;
    h.hi = hi;
    h.least_nonzero = least_nonzero;
    h.sum = sum;
    h.sumsq = sumsq;
    h.finite = finite;
    h.nonfinite = nonfinite;
    h.zeros = zeros;
    h.subnormal = subnormal;
    return h;
  }
};
struct MergeDeviceHealth {
  __device__ __forceinline__ DeviceHealthSums operator()(DeviceHealthSums a,
                                                         const DeviceHealthSums& b) const {
    a.merge(b);
    return a;
  }
};

// Where a measuring launch's blocks leave their partial sums, the per-slot count of blocks done,
// and the step's rows.
struct HealthOut {
  // Each slot's own area of `per_slot` partials, one per block of its check: checks of distinct
  // slots may run side by side (launches on several streams).
  DeviceHealthSums* partials = nullptr;
  unsigned per_slot = 0;
  unsigned int* arrivals = nullptr;
  float* rows = nullptr;  // [the bank's slots, kHealthFieldCount]
};

// A thread's running sums over its share of a buffer of element type `kType` (HealthSums' rule);
// counts in 32 bits (a share is far below 2^32 values).
template <ElementType kType>
struct ThreadHealth {
  static constexpr float kSmallestNormal = static_cast<float>(type_limits(kType).smallest_normal);
  float lo = INFINITY, hi = -INFINITY, least = INFINITY;
  double sum = 0, sumsq = 0;
  unsigned finite = 0u, nonfinite = 0u, zeros = 0u, subnormal = 0u;
  // The value's kind (0: finite, else nonfinite_kind).
  __device__ __forceinline__ unsigned add(float v) {
    if (!finite_value(v)) {
      ++nonfinite;
      return nonfinite_kind(v);
    }
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
    const double d = v;
    sum += d;
    sumsq += d * d;
    ++finite;
    zeros += v == 0.f;
    const float a = fabsf(v);
    if (a != 0.f) {
      least = fminf(least, a);
      subnormal += a < kSmallestNormal;
    }
    return 0u;
  }
  __device__ __forceinline__ DeviceHealthSums sums() const {
    DeviceHealthSums h;
    h.lo = lo;
    h.hi = hi;
    h.least_nonzero = least;
    h.sum = sum;
    h.sumsq = sumsq;
    h.finite = finite;
    h.nonfinite = nonfinite;
    h.zeros = zeros;
    h.subnormal = subnormal;
    return h;
  }
};

// Another block's partial, read past L1 (the blocks of one launch do not share an L1).
__device__ __forceinline__ DeviceHealthSums load_partial(const DeviceHealthSums* p) {
  DeviceHealthSums h;
  h.lo = __ldcg(&p->lo);
  h.hi = __ldcg(&p->hi);
  h.least_nonzero = __ldcg(&p->least_nonzero);
  h.sum = __ldcg(&p->sum);
  h.sumsq = __ldcg(&p->sumsq);
  h.finite = __ldcg(&p->finite);
  h.nonfinite = __ldcg(&p->nonfinite);
  h.zeros = __ldcg(&p->zeros);
  h.subnormal = __ldcg(&p->subnormal);
  return h;
}

// The block's sums (every thread of the block calls it) as its partial, one of the slot's blocks
// [first, first + blocks) of the launch; the last of them to arrive folds their partials and
// writes the slot's row (against the limits of its element type).
template <int kThreads>
__device__ void health_out(const DeviceHealthSums& mine, const HealthOut& h, int slot,
                           unsigned first, unsigned blocks, ElementType type) {
  const DeviceHealthSums block = block_reduce<kThreads>(mine, MergeDeviceHealth());
  __shared__ bool last;
  DeviceHealthSums* const partials = h.partials + static_cast<std::size_t>(slot) * h.per_slot;
  if (threadIdx.x == 0) {
    partials[blockIdx.x - first] = block;
    __threadfence();  // the partial is visible before the arrival is counted
    last = atomicAdd(h.arrivals + slot, 1u) == blocks - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  DeviceHealthSums mine_of_all;
  for (unsigned b = threadIdx.x; b < blocks; b += kThreads)
    mine_of_all.merge(load_partial(partials + b));
  const DeviceHealthSums all = block_reduce<kThreads>(mine_of_all, MergeDeviceHealth());
  if (threadIdx.x != 0) return;
  all.widened().write(h.rows + slot * kHealthFieldCount, type_limits(type));
  h.arrivals[slot] = 0u;  // ready for the slot's next check
}

}  // namespace nanscope::cuda
