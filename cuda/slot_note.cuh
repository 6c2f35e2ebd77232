// Device code shared by the sentinel checks (sentinel_check.cu) and the producers that check their
// own output (the IQN head's bias-and-relu, Adam): what one value's kind is, a warp's sum of kinds
// and counts, and a warp's addition into a slot's record. Integer atomics only, so the record does
// not depend on which warp comes first.
#pragma once

#include "reduce.cuh"
#include "sentinel_check.h"
#include "slot_sink.h"

namespace nanscope::cuda {

// 0 finite, 1 NaN, 2 +Inf, 4 -Inf (no fast-math anywhere, so isfinite/isnan are honest).
__device__ __forceinline__ unsigned nonfinite_kind(float v) {
  return isfinite(v) ? 0u : isnan(v) ? 1u : (v > 0.f ? 2u : 4u);
}

// Kinds ORed and counts summed over the 32 lanes of a full warp (every lane gets the result).
struct KindsCount {
  unsigned kinds, count;
};
struct MergeKinds {
  __device__ __forceinline__ KindsCount operator()(const KindsCount& a, const KindsCount& b) const {
    return {a.kinds | b.kinds, a.count + b.count};
  }
};
__device__ __forceinline__ void warp_sum(unsigned& kinds, unsigned& count) {
  const KindsCount all = warp_reduce(KindsCount{kinds, count}, MergeKinds());
  kinds = all.kinds;
  count = all.count;
}

// Lane 0 adds a warp's finding (kinds != 0, the same on every lane) into the slot's record: kinds
// ORed, the first step set once (compare-and-swap), the count summed over that step's warps, the
// step's history byte, status word and first-fire word. Called by every lane of the warp; returns
// to every lane the slot's first step as it was before (-1: this warp set it, a first fire).
__device__ __forceinline__ int note_warp(const SlotSink& s, unsigned kinds, unsigned count) {
  const int lane = threadIdx.x % 32;
  int prev = 0;
  if (lane == 0) {
    const int step = *s.step;
    DeviceSlotRecord& r = s.records[s.slot];
    atomicOr(&r.kinds, kinds);
    prev = atomicCAS(&r.first_step, -1, step);
    if (prev == -1) {
      r.exec_position = s.exec;
      atomicOr(s.status + 1, 1u);  // a first fire in this step
    }
    if (prev == -1 || prev == step)
      atomicAdd(reinterpret_cast<unsigned long long*>(&r.count),
                static_cast<unsigned long long>(count));
    // The history byte, through its aligned word (rows are padded to whole words: slot_sink.h).
    unsigned char* row = s.history + static_cast<size_t>(step) * s.row_bytes;
    atomicOr(reinterpret_cast<unsigned int*>(row + (s.slot & ~3)), kinds << (8 * (s.slot & 3)));
    atomicOr(s.status, kinds);
  }
  return __shfl_sync(0xffffffffu, prev, 0);
}

// For a producer: every lane of a full warp passes the kinds and count of the values it wrote; a
// warp whose values are all finite costs one vote and writes nothing.
__device__ __forceinline__ void note_in_producer(const SlotSink& s, unsigned kinds,
                                                 unsigned count) {
  if (!__any_sync(0xffffffffu, kinds != 0u)) return;
  warp_sum(kinds, count);
  note_warp(s, kinds, count);
}

}  // namespace nanscope::cuda
