// The fused check's device code (sentinel_check.cu launches it; included there alone): each block
// finds its item through the launch table's block map (fused_tables.h), scans its share of the
// item's buffer with float4 loads, and the warps that find non-finite values add them into the
// slot's record (slot_note.cuh); the warp that sees a slot's first fire copies its buffer into the
// item's capture area or the bank's arena. Optionally measures the slot's health in the same pass.
#pragma once

#include "fused_tables.h"
#include "health_reduce.cuh"
#include "reduce.cuh"
#include "slot_note.cuh"

namespace nanscope::cuda::fused {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // float4 loads in flight per thread

// Where a slot checked without a capture area of its own gets its buffer copied at its first fire
// in the fold: the next free floats of the arena while they last (a slot whose buffer no longer
// fits is not copied; docs/sdk.md, "Device buffers").
struct CaptureArena {
  float* data = nullptr;               // null: no arena
  unsigned long long capacity = 0;     // floats
  unsigned long long* used = nullptr;  // floats handed out in the fold (may pass the capacity)
  unsigned long long* at = nullptr;    // [slots]: where the slot's copy starts; ~0: none
};

// The warp that saw `slot`'s first fire takes `n` floats of the arena (lane 0, one integer atomic;
// rounded up to whole float4s so that each copy starts 16-byte aligned). Every lane gets the area,
// or null when the arena has no room left for it.
inline __device__ float* reserve_capture(const CaptureArena& a, int slot, unsigned long long n) {
  unsigned long long start = ~0ull;
  if (threadIdx.x % 32 == 0) {
    const unsigned long long taken = atomicAdd(a.used, (n + 3) / 4 * 4);
    if (taken + n <= a.capacity) {
      start = taken;
      a.at[slot] = taken;
    }
  }
  start = __shfl_sync(0xffffffffu, start, 0);
  return start == ~0ull ? nullptr : a.data + start;
}

// A slot's buffer into its capture area by one warp (it runs only at a first fire): 16-byte moves,
// four in flight per lane when both ends are aligned.
inline __device__ __noinline__ void warp_copy(const float* __restrict__ src,
                                              float* __restrict__ dst, size_t n, int lane) {
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15u) == 0) {
    const size_t n4 = n / 4;
    const float4* s4 = reinterpret_cast<const float4*>(src);
    float4* d4 = reinterpret_cast<float4*>(dst);
    constexpr int kInFlight = 4;
    size_t i = lane;
    for (; i + (kInFlight - 1) * 32 < n4; i += kInFlight * 32) {
      float4 v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) v[u] = s4[i + u * 32];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) d4[i + u * 32] = v[u];
    }
    for (; i < n4; i += 32) d4[i] = s4[i];
    done = 4 * n4;
  }
  for (size_t i = done + lane; i < n; i += 32) dst[i] = src[i];
}

// A thread's share of x[0..n): x[start], x[start + stride], ... As float4 loads where x is 16-byte
// aligned, kUnroll of them in flight before any use (the scan is bound by memory latency
// otherwise): `group(v)` gets each array of loads (kUnroll, then single ones for the rest), in
// order; `one(value)` each value of the tail and of an unaligned buffer. The one loop of both the
// plain check and the health-measuring one, so both visit values in the same order.
template <class Group, class One>
__device__ __forceinline__ void scan_float4(const float* __restrict__ x, unsigned n, unsigned start,
                                            unsigned stride, Group group, One one) {
  if ((reinterpret_cast<uintptr_t>(x) & 15u) != 0) {
    for (unsigned i = start; i < n; i += stride) one(__ldg(x + i));
    return;
  }
  const unsigned n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  unsigned i = start;
  for (; i + (kUnroll - 1) * stride < n4; i += kUnroll * stride) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldg(x4 + i + u * stride);
    group(v);
  }
  for (; i < n4; i += stride) {
    const float4 v[1] = {__ldg(x4 + i)};
    group(v);
  }
  for (unsigned j = 4 * n4 + start; j < n; j += stride) one(__ldg(x + j));
}

// Each warp scans its share of one item; a warp that found non-finite values adds them into the
// slot's record with integer atomics (OR for kinds and the status word, a compare-and-swap for the
// first step, a sum for the count at the first fire), whose results do not depend on the order.
// A clean warp writes nothing, so there is no fold, no second pass and no block barrier: the cost
// while clean is the loads. The warp that sets the slot's first step copies the buffer into the
// item's capture area, or the arena's: the buffer as the check saw it, at that step. A block finds
// its item through the table's block map (two loads, however many items).
template <bool kHealth>
__global__ void __launch_bounds__(kThreads, 8)
    check_group_kernel(const FusedItem* __restrict__ items, const unsigned* __restrict__ block_item,
                       int exec_base, DeviceSlotRecord* rec, unsigned char* history,
                       unsigned row_bytes, unsigned int* status, const int* step_ptr,
                       HealthOut health, CaptureArena arena) {
  const FusedItem it = items[block_item[blockIdx.x]];
  const float* __restrict__ x = it.x;
  const unsigned n = static_cast<unsigned>(it.n);  // check_group keeps fused items below 2^31
  unsigned int kinds = 0u, count = 0u;
  const unsigned stride = it.blocks * blockDim.x;
  const unsigned start = (blockIdx.x - it.first_block) * blockDim.x + threadIdx.x;
  auto visit = [&](float v) {
    const unsigned k = nonfinite_kind(v);
    kinds |= k;
    count += k != 0u;
  };
  auto visit4 = [&](const float4& v) {
    visit(v.x);
    visit(v.y);
    visit(v.z);
    visit(v.w);
  };
  // Non-finite means an all-ones exponent (no fast-math anywhere, so this is exactly !isfinite):
  // the clean path is one AND and compare per value; kinds and counts only where one is found.
  auto any_bad4 = [](const float4& v) {
    constexpr unsigned e = 0x7f800000u;
    return ((__float_as_uint(v.x) & e) == e) | ((__float_as_uint(v.y) & e) == e) |
           ((__float_as_uint(v.z) & e) == e) | ((__float_as_uint(v.w) & e) == e);
  };
  if constexpr (kHealth) {
    // Every value is visited (its sums), in the same order as the plain check's loads. A thread's
    // counts stay far below 2^32 (check_group keeps shares small); kinds only where non-finite.
    ThreadHealth th;
    auto visit_health = [&](float v) { kinds |= th.add(v); };
    scan_float4(
        x, n, start, stride,
        [&](const auto& v) {
#pragma unroll
          for (const float4& q : v) {
            visit_health(q.x);
            visit_health(q.y);
            visit_health(q.z);
            visit_health(q.w);
          }
        },
        visit_health);
    count = th.nonfinite;
    const HealthSums sums = th.sums();
    health_out<kThreads>(sums, health, it.slot, it.first_block, it.blocks);
  } else {
    scan_float4(
        x, n, start, stride,
        [&](const auto& v) {
          bool bad = false;
#pragma unroll
          for (const float4& q : v) bad |= any_bad4(q);
          if (bad)
#pragma unroll
            for (const float4& q : v) visit4(q);
        },
        visit);
  }
  warp_sum(kinds, count);  // a thread's count is far below 2^32 (check_group keeps shares small)
  if (kinds == 0u) return;
  // A negative position counts from the launch's first (DeviceBank::launch_group).
  const int exec = it.exec >= 0 ? it.exec : exec_base - 1 - it.exec;
  const SlotSink sink{rec, history, status, step_ptr, it.slot, exec, row_bytes};
  if (note_warp(sink, kinds, count) != -1) return;
  float* area = it.capture;
  if (!area && arena.data) area = reserve_capture(arena, it.slot, it.n);
  if (area) warp_copy(x, area, n, threadIdx.x % 32);
}

}  // namespace nanscope::cuda::fused
