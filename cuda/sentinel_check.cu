#include <cuda_runtime.h>

#include <algorithm>

#include "device_array.h"
#include "sentinel_check.h"

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

__device__ __forceinline__ void block_reduce(Partial& p) {
  __shared__ Partial sh[kThreads];
  sh[threadIdx.x] = p;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) combine(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  p = sh[0];
}

// Pass 1: each block scans a grid-stride share of the buffer (float4 loads when aligned).
__global__ void scan_partials(const float* __restrict__ x, size_t n, Partial* __restrict__ out) {
  Partial p{0u, 0ull, -1};
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  auto visit = [&](float v, size_t i) {
    // isfinite/isnan are honest here: no fast-math on any CUDA code of nanscope.
    if (!isfinite(v)) {
      p.kinds |= isnan(v) ? 1u : (v > 0.f ? 2u : 4u);
      ++p.count;
      if (p.first_bad < 0) p.first_bad = static_cast<long long>(i);  // first of this thread's share
    }
  };
  const bool aligned = (reinterpret_cast<uintptr_t>(x) & 15u) == 0;
  if (aligned) {
    const size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
      const float4 v = __ldg(x4 + i);
      visit(v.x, 4 * i);
      visit(v.y, 4 * i + 1);
      visit(v.z, 4 * i + 2);
      visit(v.w, 4 * i + 3);
    }
    for (size_t i = 4 * n4 + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
      visit(__ldg(x + i), i);
  } else {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
      visit(__ldg(x + i), i);
  }
  block_reduce(p);
  if (threadIdx.x == 0) out[blockIdx.x] = p;
}

// Updates a slot's record and the step's history byte from a folded partial and ORs its kinds into
// the status word (integer atomics: several items finish in parallel; an OR is order-free). Returns
// whether this is the slot's first fire in the fold, which also raises the step's first-fire word.
__device__ bool record_fire(const Partial& p, DeviceSlotRecord* rec, unsigned char* history_row,
                            unsigned int* status, int slot, int step, int exec_position) {
  if (p.kinds == 0) return false;
  DeviceSlotRecord& r = rec[slot];
  const bool first = r.first_step < 0;
  if (first) {
    r.first_step = step;
    r.count = static_cast<long long>(p.count);
    r.exec_position = exec_position;
    atomicOr(status + 1, 1u);
  }
  r.kinds |= p.kinds;
  history_row[slot] |= static_cast<unsigned char>(p.kinds);
  atomicOr(status, p.kinds);
  return first;
}

// A slot's buffer into its capture area, by one block (it runs only at a first fire).
__device__ void block_copy(const float* __restrict__ src, float* __restrict__ dst, size_t n) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// Pass 2: one block folds the partials in a fixed order and updates the slot's record, the step's
// history byte and the status word.
// The step comes from device memory (set by begin_step before the step's work), so a captured
// graph of the checks records into the right history row at every replay.
__global__ void finish_check(const Partial* __restrict__ partials, int blocks, DeviceSlotRecord* rec,
                             unsigned char* history, unsigned int* status, int slot, const int* step_ptr,
                             int exec_position) {
  const int step = *step_ptr;
  unsigned char* history_row = history + static_cast<size_t>(step) * kBankSlots;
  Partial p{0u, 0ull, -1};
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) combine(p, partials[b]);
  block_reduce(p);
  if (threadIdx.x == 0) record_fire(p, rec, history_row, status, slot, step, exec_position);
}

__global__ void begin_step_kernel(int step, int* step_ptr, unsigned int* status) {
  *step_ptr = step;
  status[0] = 0u;  // the step's status word
  status[1] = 0u;  // raised by a first fire in the step
}

// ---- The fused check: every slot due at a call site in one launch ----
// The table travels by value as a kernel parameter, so a captured graph holds it.
constexpr int kGroupMax = kBankSlots;
constexpr int kGroupBlocks = 2048;  // the most blocks of one fused launch (the partials' scratch)
constexpr int kUnroll = 4;          // float4 loads in flight per thread
struct GroupTable {
  int count;
  const float* x[kGroupMax];
  unsigned long long n[kGroupMax];
  int slot[kGroupMax];  // distinct within a table (check_group splits otherwise)
  float* capture[kGroupMax];  // where the buffer goes at the slot's first fire (null: nowhere)
  int exec[kGroupMax];
  int block_start[kGroupMax + 1];  // blocks [block_start[i], block_start[i+1]) scan item i
};

// A warp's partials combined by shuffles. The first bad index is a minimum over unsigned values,
// where "none" (-1) is the largest; every operation is an OR, an integer sum or a minimum, so the
// result does not depend on the order.
__device__ __forceinline__ void warp_reduce(Partial& p) {
  unsigned long long first = static_cast<unsigned long long>(p.first_bad);
  for (int o = 16; o > 0; o >>= 1) {
    p.kinds |= __shfl_xor_sync(0xffffffffu, p.kinds, o);
    p.count += __shfl_xor_sync(0xffffffffu, p.count, o);
    const unsigned long long f = __shfl_xor_sync(0xffffffffu, first, o);
    first = f < first ? f : first;
  }
  p.first_bad = static_cast<long long>(first);
}

// The whole block's partial, valid in every thread.
__device__ __forceinline__ void block_reduce_warps(Partial& p) {
  __shared__ Partial sh[kThreads / 32];
  warp_reduce(p);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = p;
  __syncthreads();
  p = lane < kThreads / 32 ? sh[lane] : Partial{0u, 0ull, -1};
  warp_reduce(p);
}

// Updates a slot's record and the step's history byte from a folded partial; returns its kinds.

// Each block scans a share of one item into its partial; the item's last block to finish (learnt from
// the item's integer ticket) folds that item's partials and records them, so items finish in
// parallel. Integer atomics only (tickets, the status word's OR); the records do not depend on the
// grid or on which block finishes last.
__global__ void __launch_bounds__(kThreads) check_group_kernel(GroupTable t, Partial* partials, unsigned int* tickets,
                                                               DeviceSlotRecord* rec, unsigned char* history,
                                                               unsigned int* status, const int* step_ptr) {
  int item = 0;
  while (blockIdx.x >= static_cast<unsigned>(t.block_start[item + 1])) ++item;
  const unsigned first = static_cast<unsigned>(t.block_start[item]);
  const unsigned blocks = static_cast<unsigned>(t.block_start[item + 1]) - first;
  const float* __restrict__ x = t.x[item];
  const size_t n = t.n[item];
  Partial p{0u, 0ull, -1};
  const size_t stride = static_cast<size_t>(blocks) * blockDim.x;
  const size_t start = static_cast<size_t>(blockIdx.x - first) * blockDim.x + threadIdx.x;
  auto visit = [&](float v, size_t i) {
    if (!isfinite(v)) {
      p.kinds |= isnan(v) ? 1u : (v > 0.f ? 2u : 4u);
      ++p.count;
      if (p.first_bad < 0) p.first_bad = static_cast<long long>(i);
    }
  };
  auto visit4 = [&](const float4& v, size_t i) {
    visit(v.x, 4 * i);
    visit(v.y, 4 * i + 1);
    visit(v.z, 4 * i + 2);
    visit(v.w, 4 * i + 3);
  };
  if ((reinterpret_cast<uintptr_t>(x) & 15u) == 0) {
    const size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    size_t i = start;
    // kUnroll independent loads before any use: the scan is bound by memory latency otherwise.
    for (; i + (kUnroll - 1) * stride < n4; i += kUnroll * stride) {
      float4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = __ldg(x4 + i + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) visit4(v[u], i + u * stride);  // increasing index: first_bad stays the least
    }
    for (; i < n4; i += stride) visit4(__ldg(x4 + i), i);
    for (size_t j = 4 * n4 + start; j < n; j += stride) visit(__ldg(x + j), j);
  } else {
    for (size_t i = start; i < n; i += stride) visit(__ldg(x + i), i);
  }
  block_reduce_warps(p);
  const int step = *step_ptr;
  // Records the item's folded partial (each item writes only its own slot's record and history
  // byte) and, at the slot's first fire in the fold, copies its buffer into the capture area: the
  // buffer as the check saw it, at that step. While clean this is one branch.
  __shared__ bool copy_now;
  auto finish = [&](const Partial& q) {
    if (threadIdx.x == 0) {
      unsigned char* row = history + static_cast<size_t>(step) * kBankSlots;
      copy_now = record_fire(q, rec, row, status, t.slot[item], step, t.exec[item]) && t.capture[item];
    }
    __syncthreads();
    if (copy_now) block_copy(x, t.capture[item], n);
  };
  if (blocks == 1) {
    finish(p);
    return;
  }
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = p;
    __threadfence();  // the partial is visible before the ticket counts it
    last = atomicAdd(tickets + item, 1u) == blocks - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The item's last block folds its partials (at most blocks_per_item of them).
  Partial q{0u, 0ull, -1};
  for (unsigned b = first + threadIdx.x; b < first + blocks; b += blockDim.x) {
    const Partial* src = partials + b;
    combine(q, Partial{__ldcg(&src->kinds), __ldcg(&src->count), __ldcg(&src->first_bad)});
  }
  block_reduce_warps(q);
  if (threadIdx.x == 0) tickets[item] = 0u;  // ready for the next launch on the stream
  finish(q);
}

__global__ void clear_records(DeviceSlotRecord* rec) {
  const int i = threadIdx.x;
  if (i < kBankSlots) rec[i] = DeviceSlotRecord{0u, -1, 0, -1, 0};
}

}  // namespace

struct DeviceBank::Impl {
  int max_steps;
  DeviceSlotRecord* records = nullptr;
  unsigned char* history = nullptr;  // [max_steps, 36]
  unsigned int* status = nullptr;
  int* step = nullptr;               // the current step, for the checks' history row
  Partial* partials = nullptr;       // scratch for pass 1, kMaxBlocks entries
  Partial* group_partials = nullptr; // scratch for the fused check, group_capacity entries
  unsigned int* tickets = nullptr;   // the fused check's per-item finish counters (integer)
  int group_capacity = 0;
  int blocks_per_item = 0;           // the most blocks one item gets in a fused check
};

int device_sm_count() {
  int dev = 0, sms = 0;
  NANSCOPE_CUDA_CHECK(cudaGetDevice(&dev));
  NANSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

DeviceBank::DeviceBank(int max_steps, void* stream) : impl_(new Impl), stream_(stream) {
  impl_->max_steps = max_steps;
  NANSCOPE_CUDA_CHECK(cudaMalloc(&impl_->records, sizeof(DeviceSlotRecord) * kBankSlots));
  NANSCOPE_CUDA_CHECK(cudaMalloc(&impl_->history, static_cast<size_t>(max_steps) * kBankSlots));
  NANSCOPE_CUDA_CHECK(cudaMalloc(&impl_->status, 2 * sizeof(unsigned int)));  // status, first fire
  NANSCOPE_CUDA_CHECK(cudaMalloc(&impl_->step, sizeof(int)));
  NANSCOPE_CUDA_CHECK(cudaMemset(impl_->step, 0, sizeof(int)));
  NANSCOPE_CUDA_CHECK(cudaMalloc(&impl_->partials, sizeof(Partial) * kMaxBlocks));
  impl_->blocks_per_item = 4 * device_sm_count();
  impl_->group_capacity = kGroupBlocks;
  NANSCOPE_CUDA_CHECK(cudaMalloc(&impl_->group_partials, sizeof(Partial) * impl_->group_capacity));
  NANSCOPE_CUDA_CHECK(cudaMalloc(&impl_->tickets, sizeof(unsigned int) * kGroupMax));
  NANSCOPE_CUDA_CHECK(cudaMemset(impl_->tickets, 0, sizeof(unsigned int) * kGroupMax));
  reset_fold();
}

DeviceBank::~DeviceBank() {
  cudaFree(impl_->records);
  cudaFree(impl_->history);
  cudaFree(impl_->status);
  cudaFree(impl_->step);
  cudaFree(impl_->partials);
  cudaFree(impl_->group_partials);
  cudaFree(impl_->tickets);
}

void DeviceBank::check_group(const std::vector<GroupItem>& items) {
  if (items.empty()) return;
  // A slot twice in one launch would have two warps writing its record: split there instead.
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const int slot = items[i].slot;
    if (slot < 0 || slot >= kBankSlots) throw InternalError("DeviceBank: bad slot");
    if (seen >> slot & 1u) {
      check_group({items.begin(), items.begin() + static_cast<std::ptrdiff_t>(i)});
      check_group({items.begin() + static_cast<std::ptrdiff_t>(i), items.end()});
      return;
    }
    seen |= std::uint64_t{1} << slot;
  }
  GroupTable t{};
  t.count = static_cast<int>(items.size());
  // Blocks per item: enough for one unrolled round of loads per thread, at most blocks_per_item,
  // and all of them within kGroupBlocks (the cap halves until they fit; any grid gives the same
  // records).
  std::vector<int> want(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::size_t per_block = static_cast<std::size_t>(kThreads) * 4 * kUnroll;
    want[i] = static_cast<int>(std::min<std::size_t>(std::max<std::size_t>((items[i].count + per_block - 1) / per_block, 1),
                                                     static_cast<std::size_t>(impl_->blocks_per_item)));
  }
  int blocks = 0;
  for (int cap = impl_->blocks_per_item;; cap = std::max(1, cap / 2)) {
    blocks = 0;
    for (int w : want) blocks += std::min(w, cap);
    if (blocks <= kGroupBlocks || cap == 1) {
      for (int& w : want) w = std::min(w, cap);
      break;
    }
  }
  blocks = 0;
  for (int i = 0; i < t.count; ++i) {
    const GroupItem& it = items[static_cast<std::size_t>(i)];
    if (it.count / static_cast<std::size_t>(want[static_cast<std::size_t>(i)]) >= (std::size_t{1} << 32) - 4096)
      throw InternalError("DeviceBank: a buffer too large for the fused check");
    t.x[i] = it.data;
    t.n[i] = it.count;
    t.slot[i] = it.slot;
    t.capture[i] = it.capture;
    t.exec[i] = exec_++;
    t.block_start[i] = blocks;
    blocks += want[static_cast<std::size_t>(i)];
  }
  t.block_start[t.count] = blocks;
  check_group_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream_)>>>(
      t, impl_->group_partials, impl_->tickets, impl_->records, impl_->history, impl_->status, impl_->step);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

void DeviceBank::reset_fold() {
  auto s = static_cast<cudaStream_t>(stream_);
  clear_records<<<1, 64, 0, s>>>(impl_->records);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->history, 0, static_cast<size_t>(impl_->max_steps) * kBankSlots, s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->status, 0, 2 * sizeof(unsigned int), s));
  step_ = 0;
}

void DeviceBank::begin_step(int step) {
  if (step < 0 || step >= impl_->max_steps) throw InternalError("DeviceBank: step beyond the history");
  step_ = step;
  exec_ = 0;
  begin_step_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream_)>>>(step, impl_->step, impl_->status);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

void DeviceBank::check(int slot, const float* data, std::size_t n, int blocks) {
  if (slot < 0 || slot >= kBankSlots) throw InternalError("DeviceBank: bad slot");
  auto s = static_cast<cudaStream_t>(stream_);
  if (blocks <= 0) {
    const size_t want = (n / 4 + kThreads - 1) / kThreads;
    blocks = static_cast<int>(std::min<size_t>(std::max<size_t>(want, 1), 4 * static_cast<size_t>(device_sm_count())));
  }
  blocks = std::min(blocks, kMaxBlocks);
  scan_partials<<<blocks, kThreads, 0, s>>>(data, n, impl_->partials);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
  finish_check<<<1, kThreads, 0, s>>>(impl_->partials, blocks, impl_->records, impl_->history, impl_->status,
                                       slot, impl_->step, exec_++);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

BankReadback DeviceBank::readback() {
  auto s = static_cast<cudaStream_t>(stream_);
  BankReadback r;
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.records.data(), impl_->records, sizeof(DeviceSlotRecord) * kBankSlots,
                          cudaMemcpyDeviceToHost, s));
  r.history.resize(static_cast<size_t>(step_) + 1);
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.history.data(), impl_->history, r.history.size() * kBankSlots,
                          cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(&r.step_status, impl_->status, sizeof(unsigned int), cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  return r;
}

BankReadback DeviceBank::readback_step() {
  auto s = static_cast<cudaStream_t>(stream_);
  BankReadback r;
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.records.data(), impl_->records, sizeof(DeviceSlotRecord) * kBankSlots,
                                      cudaMemcpyDeviceToHost, s));
  r.history.resize(1);
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.history[0].data(), impl_->history + static_cast<size_t>(step_) * kBankSlots,
                                      kBankSlots, cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(&r.step_status, impl_->status, sizeof(unsigned int), cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  return r;
}

const std::uint32_t* DeviceBank::status_word() const { return impl_->status; }
const std::uint32_t* DeviceBank::first_fire_word() const { return impl_->status + 1; }
const int* DeviceBank::step_word() const { return impl_->step; }

}  // namespace nanscope::cuda
