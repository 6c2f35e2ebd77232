// The two-pass reference check (the sentinel's first design): pass 1 scans a buffer per block,
// pass 2 folds the blocks' partials in a fixed order and updates the slot's record in the bank
// through the slot's sink. Not part of nanscope: the GPU tests hold the fused check to it and
// bench/sentinel times it against the read-only ceiling.
#include <algorithm>

#include "../device_array.h"
#include "../reduce.cuh"
#include "../slot_note.cuh"
#include "reference_check.h"

namespace nanscope::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

struct Partial {
  unsigned int kinds;
  unsigned long long count;
  long long first_bad;  // -1: none
};

__device__ __forceinline__ void combine(Partial& a, const Partial& b) {
  a.kinds |= b.kinds;
  a.count += b.count;
  if (b.first_bad >= 0 && (a.first_bad < 0 || b.first_bad < a.first_bad)) a.first_bad = b.first_bad;
}

// Thread 0 gets the block's partial.
__device__ __forceinline__ void reduce_partials(Partial& p) {
  p = ::nanscope::cuda::block_reduce<kThreads>(p, [](Partial a, const Partial& b) {
    combine(a, b);
    return a;
  });
}

// Pass 1: each block scans a grid-stride share of the buffer (float4 loads when aligned).
__global__ void scan_partials(const float* __restrict__ x, size_t n, Partial* __restrict__ out) {
  Partial p{0u, 0ull, -1};
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  auto visit = [&](float v, size_t i) {
    if (const unsigned k = nonfinite_kind(v)) {
      p.kinds |= k;
      ++p.count;
      if (p.first_bad < 0) p.first_bad = static_cast<long long>(i);  // first of this thread's share
    }
  };
  const bool aligned = (reinterpret_cast<uintptr_t>(x) & 15u) == 0;
  if (aligned) {
    const size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
         i += stride) {
      const float4 v = __ldg(x4 + i);
      visit(v.x, 4 * i);
      visit(v.y, 4 * i + 1);
      visit(v.z, 4 * i + 2);
      visit(v.w, 4 * i + 3);
    }
    for (size_t i = 4 * n4 + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += stride)
      visit(__ldg(x + i), i);
  } else {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
      visit(__ldg(x + i), i);
  }
  reduce_partials(p);
  if (threadIdx.x == 0) out[blockIdx.x] = p;
}

// The two-pass check's record update (one thread, after the fold): the slot's record, the step's
// history byte, the status word and, at the slot's first fire in the fold, the step's first-fire
// word (the words take integer ORs, as in the fused check).
__device__ void record_fire(const Partial& p, DeviceSlotRecord* rec, unsigned char* history_row,
                            unsigned int* status, int slot, int step, int exec_position) {
  if (p.kinds == 0) return;
  DeviceSlotRecord& r = rec[slot];
  if (r.first_step < 0) {
    r.first_step = step;
    r.count = static_cast<long long>(p.count);
    r.exec_position = exec_position;
    atomicOr(status + 1, 1u);
  }
  r.kinds |= p.kinds;
  history_row[slot] |= static_cast<unsigned char>(p.kinds);
  atomicOr(status, p.kinds);
}

// Pass 2: one block folds the partials in a fixed order and updates the slot's record, the step's
// history byte and the status word.
// The step comes from device memory (set by begin_step before the step's work), so a captured
// graph of the checks records into the right history row at every replay.
__global__ void finish_check(const Partial* __restrict__ partials, int blocks,
                             DeviceSlotRecord* rec, unsigned char* history, unsigned row_bytes,
                             unsigned int* status, int slot, const int* step_ptr,
                             int exec_position) {
  const int step = *step_ptr;
  unsigned char* history_row = history + static_cast<size_t>(step) * row_bytes;
  Partial p{0u, 0ull, -1};
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) combine(p, partials[b]);
  reduce_partials(p);
  if (threadIdx.x == 0) record_fire(p, rec, history_row, status, slot, step, exec_position);
}

}  // namespace

struct ReferenceCheck::Scratch {
  DeviceArray<Partial> partials{kMaxBlocks};
};

ReferenceCheck::ReferenceCheck() : scratch_(std::make_unique<Scratch>()) {}
ReferenceCheck::~ReferenceCheck() = default;

void ReferenceCheck::operator()(DeviceBank& bank, int slot, const float* data, std::size_t n,
                                int blocks) {
  if (slot < 0 || slot >= bank.slots()) throw InternalError("ReferenceCheck: bad slot");
  const cudaStream_t s = bank.stream();
  if (blocks <= 0) {
    const size_t want = (n / 4 + kThreads - 1) / kThreads;
    blocks = static_cast<int>(
        std::min<size_t>(std::max<size_t>(want, 1), 4 * static_cast<size_t>(device_sm_count())));
  }
  blocks = std::min(blocks, kMaxBlocks);
  const SlotSink sink =
      bank.sink(slot);  // the bank's device records and the next execution position
  scan_partials<<<blocks, kThreads, 0, s>>>(data, n, scratch_->partials.get());
  NANSCOPE_LAUNCH_CHECK();
  finish_check<<<1, kThreads, 0, s>>>(scratch_->partials.get(), blocks, sink.records, sink.history,
                                      sink.row_bytes, sink.status, slot, sink.step, sink.exec);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
