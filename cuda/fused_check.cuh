// The fused check's device code (sentinel_check.cu launches it; included there alone): each block
// finds its item through the launch table's block map (fused_tables.h), scans its share of the
// item's buffer in its own element type (float32, bfloat16, float16: 16-byte loads, no copy or
// conversion in memory), and the warps that find non-finite values add them into the slot's
// record (slot_note.cuh); the warp that sees a slot's first fire copies its buffer into the item's
// capture area or the bank's arena. Optionally measures the slot's health in the same pass.
#pragma once

#include "core/element_type.h"
#include "core/half_float.h"
#include "fused_tables.h"
#include "health_reduce.cuh"
#include "reduce.cuh"
#include "slot_note.cuh"

namespace nanscope::cuda::fused {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread

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

// The element types the fused check reads, each as 16-byte vectors (uint4) of its raw values:
// how many a vector holds, whether a vector holds a non-finite one (exponent bits all ones: no
// fast-math anywhere, so this is exactly !isfinite), each value widened to float (exactly:
// core/half_float.h) in memory order, and the type's smallest normal (the underflow share's).
struct Float32Elements {
  using Raw = float;
  static constexpr unsigned kPerVector = 4;
  static constexpr ElementType kType = ElementType::Float32;
  __device__ __forceinline__ static float widen(float v) { return v; }
  __device__ __forceinline__ static bool any_bad(const uint4& v) {
    constexpr unsigned e = 0x7f800000u;
    return ((v.x & e) == e) | ((v.y & e) == e) | ((v.z & e) == e) | ((v.w & e) == e);
  }
  template <class F>
  __device__ __forceinline__ static void each(const uint4& v, F&& f) {
    f(__uint_as_float(v.x));
    f(__uint_as_float(v.y));
    f(__uint_as_float(v.z));
    f(__uint_as_float(v.w));
  }
};

// Two 16-bit values a word, the first in its low half. A value is non-finite when its exponent
// field is all ones: masked to that field and added to one at its lowest bit, it carries into the
// value's sign bit exactly then (and never into the other half's field), so one mask, add and test
// judge both halves of a word.
template <class Half, unsigned kExponent, ElementType kTypeOf>
struct HalfElements {
  using Raw = unsigned short;
  static constexpr unsigned kPerVector = 8;
  static constexpr ElementType kType = kTypeOf;
  static constexpr unsigned kMask2 = kExponent | (kExponent << 16);
  static constexpr unsigned kCarry2 = (kExponent & (~kExponent + 1u)) * 0x10001u;
  __device__ __forceinline__ static float widen(unsigned short h) {
    return static_cast<float>(Half{h});
  }
  __device__ __forceinline__ static unsigned bad_bits(unsigned w) {
    return ((w & kMask2) + kCarry2) & 0x80008000u;
  }
  __device__ __forceinline__ static bool any_bad(const uint4& v) {
    return (bad_bits(v.x) | bad_bits(v.y) | bad_bits(v.z) | bad_bits(v.w)) != 0u;
  }
  template <class F>
  __device__ __forceinline__ static void each(const uint4& v, F&& f) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      f(widen(static_cast<unsigned short>(w[k] & 0xffffu)));
      f(widen(static_cast<unsigned short>(w[k] >> 16)));
    }
  }
};
using BFloat16Elements = HalfElements<BFloat16, 0x7f80u, ElementType::BFloat16>;
using Float16Elements = HalfElements<Float16, 0x7c00u, ElementType::Float16>;

// A slot's buffer into its capture area by one warp (it runs only at a first fire), as floats:
// float32 buffers with 16-byte moves, four in flight per lane when both ends are aligned; 16-bit
// ones widened value by value (what a dump of the host path holds too).
template <class E>
__device__ __noinline__ void warp_copy(const typename E::Raw* __restrict__ src,
                                       float* __restrict__ dst, size_t n, int lane) {
  size_t done = 0;
  if constexpr (E::kType == ElementType::Float32) {
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
  }
  for (size_t i = done + lane; i < n; i += 32) dst[i] = E::widen(src[i]);
}

// A thread's share of x[0..n): x[start], x[start + stride], ... in 16-byte vectors where x is
// 16-byte aligned, kUnroll of them in flight before any use (the scan is bound by memory latency
// otherwise): `group(v)` gets each array of loads (kUnroll, then single ones for the rest), in
// order; `one(value)` each raw value of the tail and of an unaligned buffer. The one loop of both
// the plain check and the health-measuring one, so both visit values in the same order.
template <class E, class Group, class One>
__device__ __forceinline__ void scan_vectors(const typename E::Raw* __restrict__ x, unsigned n,
                                             unsigned start, unsigned stride, Group group,
                                             One one) {
  if ((reinterpret_cast<uintptr_t>(x) & 15u) != 0) {
    for (unsigned i = start; i < n; i += stride) one(__ldg(x + i));
    return;
  }
  const unsigned nv = n / E::kPerVector;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  unsigned i = start;
  for (; i + (kUnroll - 1) * stride < nv; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldg(xv + i + u * stride);
    group(v);
  }
  for (; i < nv; i += stride) {
    const uint4 v[1] = {__ldg(xv + i)};
    group(v);
  }
  for (unsigned j = E::kPerVector * nv + start; j < n; j += stride) one(__ldg(x + j));
}

// One block's share of one item, in the item's element type. Each warp scans its share; a warp
// that found non-finite values adds them into the slot's record with integer atomics (OR for
// kinds and the status word, a compare-and-swap for the first step, a sum for the count at the
// first fire), whose results do not depend on the order. A clean warp writes nothing, so there is
// no fold, no second pass and no block barrier: the cost while clean is the loads. The warp that
// sets the slot's first step copies the buffer into the item's capture area, or the arena's: the
// buffer as the check saw it, at that step.
template <bool kHealth, class E>
__device__ __forceinline__ void check_item(const FusedItem& it, int exec_base,
                                           DeviceSlotRecord* rec, unsigned char* history,
                                           unsigned row_bytes, unsigned int* status,
                                           const int* step_ptr, const HealthOut& health,
                                           const CaptureArena& arena) {
  const auto* __restrict__ x = static_cast<const typename E::Raw*>(it.x);
  const unsigned n = static_cast<unsigned>(it.n);  // check_group keeps fused items below 2^31
  unsigned int kinds = 0u, count = 0u;
  const unsigned stride = it.blocks * blockDim.x;
  const unsigned start = (blockIdx.x - it.first_block) * blockDim.x + threadIdx.x;
  auto visit = [&](float v) {
    const unsigned k = nonfinite_kind(v);
    kinds |= k;
    count += k != 0u;
  };
  if constexpr (kHealth) {
    // Every value is visited (its sums), in the same order as the plain check's loads. A thread's
    // counts stay far below 2^32 (check_group keeps shares small); kinds only where non-finite.
    ThreadHealth<E::kType> th;
    auto visit_health = [&](float v) { kinds |= th.add(v); };
    scan_vectors<E>(
        x, n, start, stride,
        [&](const auto& v) {
#pragma unroll
          for (const uint4& q : v) E::each(q, visit_health);
        },
        [&](typename E::Raw r) { visit_health(E::widen(r)); });
    count = th.nonfinite;
    const DeviceHealthSums sums = th.sums();
    health_out<kThreads>(sums, health, it.slot, it.first_block, it.blocks, E::kType);
  } else {
    // The clean path is one mask and compare per value (per pair of 16-bit values); kinds and
    // counts only where a vector holds a non-finite one.
    scan_vectors<E>(
        x, n, start, stride,
        [&](const auto& v) {
          bool bad = false;
#pragma unroll
          for (const uint4& q : v) bad |= E::any_bad(q);
          if (bad)
#pragma unroll
            for (const uint4& q : v) E::each(q, visit);
        },
        [&](typename E::Raw r) { visit(E::widen(r)); });
  }
  warp_sum(kinds, count);  // a thread's count is far below 2^32 (check_group keeps shares small)
  if (kinds == 0u) return;
  // A negative position counts from the launch's first (DeviceBank::launch_group).
  const int exec = it.exec >= 0 ? it.exec : exec_base - 1 - it.exec;
  const SlotSink sink{rec, history, status, step_ptr, it.slot, exec, row_bytes};
  if (note_warp(sink, kinds, count) != -1) return;
  float* area = it.capture;
  if (!area && arena.data) area = reserve_capture(arena, it.slot, it.n);
  if (area) warp_copy<E>(x, area, n, threadIdx.x % 32);
}

// The fused check of items of one element type E: a block finds its item through the table's
// block map (two loads, however many items) and checks its share. Eight blocks an SM (32
// registers a thread); the 16-bit types' health-measuring check unpacks eight values a load and
// keeps its sums in registers at four (64 a thread, none spilled).
template <bool kHealth, class E>
__global__ void __launch_bounds__(kThreads, kHealth&& E::kType != ElementType::Float32 ? 4 : 8)
    check_group_kernel(const FusedItem* __restrict__ items, const unsigned* __restrict__ block_item,
                       int exec_base, DeviceSlotRecord* rec, unsigned char* history,
                       unsigned row_bytes, unsigned int* status, const int* step_ptr,
                       HealthOut health, CaptureArena arena) {
  const FusedItem it = items[block_item[blockIdx.x]];
  check_item<kHealth, E>(it, exec_base, rec, history, row_bytes, status, step_ptr, health, arena);
}

}  // namespace nanscope::cuda::fused
