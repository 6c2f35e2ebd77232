#include <cuda_runtime.h>

#include <algorithm>

#include "device_array.h"
#include "health_reduce.cuh"
#include "reduce.cuh"
#include "sentinel_check.h"
#include "slot_note.cuh"

namespace nanscope::cuda {
namespace {

constexpr int kThreads = 256;

constexpr int kHealthWords = kBankSlots * kHealthFieldCount;

// One thread per health word (kHealthWords threads): the step's health starts unmeasured. A
// negative `step` is counted on the device (begin_counted_step): the next row, the last row at
// most, and one more step begun.
__global__ void begin_step_kernel(int step, int last_row, int* step_ptr, unsigned int* status,
                                  float* health, unsigned int* mass_bits,
                                  unsigned long long* crossings) {
  const int i = threadIdx.x;
  if (i == 0) {
    if (step < 0) {
      step = min(*step_ptr + 1, last_row);
      status[2] += 1u;  // steps begun since the rewind
    }
    *step_ptr = step;
    status[0] = 0u;  // the step's status word
    status[1] = 0u;  // raised by a first fire in the step
    crossings[0] = crossings[1] = 0ull;
  }
  if (i < kHealthWords) health[i] = __int_as_float(0x7fc00000);
  if (i < kBankSlots) mass_bits[i] = 0u;
}

// ---- The fused check: every slot due at a call site in one launch ----
// The table travels by value as a kernel parameter, so a captured graph holds it.
constexpr int kGroupMax = kBankSlots;
constexpr int kUnroll = 4;  // float4 loads in flight per thread
struct GroupTable {
  int count;
  const float* x[kGroupMax];
  unsigned long long n[kGroupMax];
  int slot[kGroupMax];        // distinct within a table (check_group splits otherwise)
  float* capture[kGroupMax];  // where the buffer goes at the slot's first fire (null: nowhere)
  int exec[kGroupMax];
  int block_start[kGroupMax + 1];  // blocks [block_start[i], block_start[i+1]) scan item i
};

// A slot's buffer into its capture area by one warp (it runs only at a first fire): 16-byte moves,
// four in flight per lane when both ends are aligned.
__device__ __noinline__ void warp_copy(const float* __restrict__ src, float* __restrict__ dst,
                                       size_t n, int lane) {
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
// capture area, if there is one: the buffer as the check saw it, at that step.
template <bool kHealth>
__global__ void __launch_bounds__(kThreads, 8)
    check_group_kernel(GroupTable t, DeviceSlotRecord* rec, unsigned char* history,
                       unsigned int* status, const int* step_ptr, HealthOut health) {
  int item = 0;
  while (blockIdx.x >= static_cast<unsigned>(t.block_start[item + 1])) ++item;
  const unsigned first = static_cast<unsigned>(t.block_start[item]);
  const unsigned blocks = static_cast<unsigned>(t.block_start[item + 1]) - first;
  const float* __restrict__ x = t.x[item];
  const unsigned n = static_cast<unsigned>(t.n[item]);  // check_group keeps fused items below 2^31
  unsigned int kinds = 0u, count = 0u;
  const unsigned stride = blocks * blockDim.x;
  const unsigned start = (blockIdx.x - first) * blockDim.x + threadIdx.x;
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
    health_out<kThreads>(sums, health, t.slot[item], first, blocks);
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
  const SlotSink sink{rec, history, status, step_ptr, t.slot[item], t.exec[item]};
  const int prev = note_warp(sink, kinds, count);
  if (prev == -1 && t.capture[item]) warp_copy(x, t.capture[item], n, threadIdx.x % 32);
}

// The capture copies of slots their producers checked: a producer cannot copy its buffer at the
// first fire (other warps are still writing it), so this runs after it, in stream order, and copies
// the buffers whose slot fired for the first time in this step. While clean it reads one word.
struct LateCopies {
  int count;
  int slot[kGroupMax];
  const float* src[kGroupMax];
  float* dst[kGroupMax];
  unsigned long long n[kGroupMax];
};

__global__ void copy_first_fires_kernel(LateCopies c, const DeviceSlotRecord* rec,
                                        const unsigned int* status, const int* step_ptr) {
  if (status[1] == 0u) return;
  const int step = *step_ptr;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int k = 0; k < c.count; ++k) {
    if (rec[c.slot[k]].first_step != step) continue;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < c.n[k];
         i += stride)
      c.dst[k][i] = c.src[k][i];
  }
}

__global__ void clear_records(DeviceSlotRecord* rec) {
  const int i = threadIdx.x;
  if (i < kBankSlots) rec[i] = DeviceSlotRecord{0u, -1, 0, -1, 0};
}

}  // namespace

// The bank's device memory, each array freed by its own destructor (also when a later allocation
// in the constructor fails).
struct DeviceBank::Impl {
  int max_steps;
  DeviceArray<DeviceSlotRecord> records{kBankSlots};
  DeviceArray<unsigned char> history;   // [max_steps, kBankSlots]
  DeviceArray<unsigned int> status{3};  // the status word, the first-fire word, steps begun
  DeviceArray<int> step{1};             // the current step, for the checks' history row
  int blocks_per_item = 0;              // the most blocks one item gets in a fused check
  // The step's health (see DeviceStepHealth) and the fused check's partials.
  DeviceArray<float> health_rows{kHealthWords};
  DeviceArray<unsigned int> mass_bits{kBankSlots};
  DeviceArray<unsigned long long> crossings{2};
  DeviceArray<HealthSums> partials;
  DeviceArray<unsigned int> arrivals{kBankSlots};
  explicit Impl(int steps)
      : max_steps(steps), history(static_cast<std::size_t>(steps) * kBankSlots) {}
};

int device_sm_count() {
  int dev = 0, sms = 0;
  NANSCOPE_CUDA_CHECK(cudaGetDevice(&dev));
  NANSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

DeviceBank::DeviceBank(int max_steps, cudaStream_t stream, bool health)
    : impl_(std::make_unique<Impl>(max_steps)), stream_(stream), health_(health) {
  NANSCOPE_CUDA_CHECK(cudaMemset(impl_->step.get(), 0, sizeof(int)));
  NANSCOPE_CUDA_CHECK(cudaMemset(impl_->arrivals.get(), 0, kBankSlots * sizeof(unsigned int)));
  impl_->blocks_per_item = 4 * device_sm_count();
  // Each slot its own partials (check_group gives an item at most blocks_per_item blocks).
  if (health_)
    impl_->partials = DeviceArray<HealthSums>(static_cast<std::size_t>(kBankSlots) *
                                              static_cast<std::size_t>(impl_->blocks_per_item));
  reset_fold();
  begin_step(0);
}

DeviceBank::~DeviceBank() = default;

void DeviceBank::check_group(const std::vector<GroupItem>& items, cudaStream_t stream) {
  if (items.empty()) return;
  // A slot twice in one launch would have two warps writing its record: split there instead.
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const int slot = items[i].slot;
    if (slot < 0 || slot >= kBankSlots) throw InternalError("DeviceBank: bad slot");
    if (seen >> slot & 1u) {
      check_group({items.begin(), items.begin() + static_cast<std::ptrdiff_t>(i)}, stream);
      check_group({items.begin() + static_cast<std::ptrdiff_t>(i), items.end()}, stream);
      return;
    }
    seen |= std::uint64_t{1} << slot;
  }
  GroupTable t{};
  t.count = static_cast<int>(items.size());
  // Blocks per item: enough for one unrolled round of loads per thread, at most blocks_per_item
  // (then each thread loops). Any grid gives the same records.
  const std::size_t per_block = static_cast<std::size_t>(kThreads) * 4 * kUnroll;
  int blocks = 0;
  for (int i = 0; i < t.count; ++i) {
    const GroupItem& it = items[static_cast<std::size_t>(i)];
    const std::size_t want =
        std::min<std::size_t>(std::max<std::size_t>((it.count + per_block - 1) / per_block, 1),
                              static_cast<std::size_t>(impl_->blocks_per_item));
    // Indices and a warp's count are 32-bit.
    if (it.count >= (std::size_t{1} << 31))
      throw InternalError(
          "DeviceBank: a buffer too large for the fused check (2^31 floats or more)");
    t.x[i] = it.data;
    t.n[i] = it.count;
    t.slot[i] = it.slot;
    t.capture[i] = it.capture;
    t.exec[i] = it.exec >= 0 ? it.exec : exec_++;
    t.block_start[i] = blocks;
    blocks += static_cast<int>(want);
  }
  t.block_start[t.count] = blocks;
  if (health_) {
    const HealthOut h{impl_->partials.get(), static_cast<unsigned>(impl_->blocks_per_item),
                      impl_->arrivals.get(), impl_->health_rows.get()};
    check_group_kernel<true><<<blocks, kThreads, 0, stream>>>(
        t, impl_->records.get(), impl_->history.get(), impl_->status.get(), impl_->step.get(), h);
  } else {
    check_group_kernel<false>
        <<<blocks, kThreads, 0, stream>>>(t, impl_->records.get(), impl_->history.get(),
                                          impl_->status.get(), impl_->step.get(), HealthOut{});
  }
  NANSCOPE_LAUNCH_CHECK();
}

void DeviceBank::reset_fold() {
  auto s = stream_;
  clear_records<<<1, 64, 0, s>>>(impl_->records.get());
  NANSCOPE_LAUNCH_CHECK();
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->history.get(), 0,
                                      static_cast<size_t>(impl_->max_steps) * kBankSlots, s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->status.get(), 0, 3 * sizeof(unsigned int), s));
  step_ = 0;
}

void DeviceBank::rewind(cudaStream_t stream, std::size_t used_rows) {
  const int before_first = -1;
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(impl_->step.get(), &before_first, sizeof(int),
                                      cudaMemcpyHostToDevice, stream));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->status.get() + 2, 0, sizeof(unsigned int), stream));
  // The rows are used again from row 0: the checks OR into them.
  used_rows = std::min(used_rows, static_cast<std::size_t>(impl_->max_steps));
  if (used_rows > 0)
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->history.get(), 0, used_rows * kBankSlots, stream));
  exec_ = 0;
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));  // the copy's source is on this stack
}

void DeviceBank::begin_counted_step(cudaStream_t stream) {
  exec_ = 0;
  begin_step_kernel<<<1, kHealthWords, 0, stream>>>(-1, impl_->max_steps - 1, impl_->step.get(),
                                                    impl_->status.get(), impl_->health_rows.get(),
                                                    impl_->mass_bits.get(), impl_->crossings.get());
  NANSCOPE_LAUNCH_CHECK();
}

std::uint32_t DeviceBank::steps_begun() {
  std::uint32_t n = 0;
  NANSCOPE_CUDA_CHECK(
      cudaMemcpyAsync(&n, impl_->status.get() + 2, sizeof n, cudaMemcpyDeviceToHost, stream_));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return n;
}

std::vector<float> DeviceBank::read_health_rows() {
  std::vector<float> rows(kHealthWords);
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(rows.data(), impl_->health_rows.get(),
                                      rows.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                      stream_));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return rows;
}

void DeviceBank::begin_step(int step) {
  if (step < 0 || step >= impl_->max_steps)
    throw InternalError("DeviceBank: step beyond the history");
  step_ = step;
  exec_ = 0;
  begin_step_kernel<<<1, kHealthWords, 0, stream_>>>(
      step, impl_->max_steps - 1, impl_->step.get(), impl_->status.get(), impl_->health_rows.get(),
      impl_->mass_bits.get(), impl_->crossings.get());
  NANSCOPE_LAUNCH_CHECK();
}

BankReadback DeviceBank::readback() {
  return read_rows(0, static_cast<std::size_t>(step_) + 1);
}

BankReadback DeviceBank::readback_step() {
  return read_rows(static_cast<std::size_t>(step_), 1);
}

BankReadback DeviceBank::read_rows(std::size_t first, std::size_t rows) {
  auto s = stream_;
  BankReadback r;
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.records.data(), impl_->records.get(),
                                      sizeof(DeviceSlotRecord) * kBankSlots, cudaMemcpyDeviceToHost,
                                      s));
  r.history.resize(rows);
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.history.data(), impl_->history.get() + first * kBankSlots,
                                      rows * kBankSlots, cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(&r.step_status, impl_->status.get(), sizeof(unsigned int),
                                      cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  r.copies = 3;  // the records, the history rows and the status word
  return r;
}

SlotSink DeviceBank::sink(int slot, int exec) {
  if (slot < 0 || slot >= kBankSlots) throw InternalError("DeviceBank: bad slot");
  return SlotSink{
      impl_->records.get(),      impl_->history.get(), impl_->status.get(), impl_->step.get(), slot,
      exec >= 0 ? exec : exec_++};
}

void DeviceBank::copy_first_fires(const std::vector<GroupItem>& items) {
  if (items.empty()) return;
  if (items.size() > static_cast<std::size_t>(kGroupMax))
    throw InternalError("DeviceBank: too many capture copies");
  LateCopies c{};
  c.count = static_cast<int>(items.size());
  for (int k = 0; k < c.count; ++k) {
    const GroupItem& it = items[static_cast<std::size_t>(k)];
    c.slot[k] = it.slot;
    c.src[k] = it.data;
    c.dst[k] = it.capture;
    c.n[k] = it.count;
  }
  // Two blocks per SM: the copy runs only in a step with a first fire.
  copy_first_fires_kernel<<<impl_->blocks_per_item / 2, kThreads, 0, stream_>>>(
      c, impl_->records.get(), impl_->status.get(), impl_->step.get());
  NANSCOPE_LAUNCH_CHECK();
}

namespace {

// One thread per row: the row's |mass - 1| (core/slot_health.h), its maximum over the rows as the
// largest float bits (non-negative floats order as their bits), plus one so that 0 means none.
__global__ void c51_rows_kernel(const float* __restrict__ x, size_t rows, int atoms, bool log_probs,
                                unsigned int* bits) {
  const size_t r = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const double err = c51_mass_error(x + r * atoms, atoms, log_probs);
  if (err >= 0) atomicMax(bits, __float_as_uint(static_cast<float>(err)) + 1u);
}

// One thread per (sample, sub-action); a warp's counts summed before one atomic add each.
__global__ void crossings_kernel(const float* __restrict__ q, const float* __restrict__ tau, int B,
                                 int N, int A, unsigned long long* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  CrossingCount c;
  if (k < B * A) {
    const int b = k / A, a = k % A;
    c = quantile_crossings(q + static_cast<size_t>(b) * N * A + a, A,
                           tau + static_cast<size_t>(b) * N, N);
  }
  const unsigned long long crossed =
      warp_reduce(static_cast<unsigned long long>(c.crossed), Plus());
  const unsigned long long ordered =
      warp_reduce(static_cast<unsigned long long>(c.ordered), Plus());
  if (threadIdx.x % 32 == 0 && ordered) {
    atomicAdd(out, crossed);
    atomicAdd(out + 1, ordered);
  }
}

}  // namespace

void DeviceBank::measure_c51_rows(int slot, const float* data, std::size_t rows, int atoms,
                                  cudaStream_t stream) {
  if (!health_ || rows == 0) return;
  const auto blocks = static_cast<unsigned>((rows + kThreads - 1) / kThreads);
  c51_rows_kernel<<<blocks, kThreads, 0, stream>>>(data, rows, atoms,
                                                   (builtin_slot(slot).roles & kRoleLogProbs) != 0,
                                                   impl_->mass_bits.get() + slot);
  NANSCOPE_LAUNCH_CHECK();
}

void DeviceBank::measure_crossings(const float* quantiles, const float* taus, int B, int N, int A,
                                   cudaStream_t stream) {
  if (!health_ || B * A == 0) return;
  crossings_kernel<<<(B * A + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      quantiles, taus, B, N, A, impl_->crossings.get());
  NANSCOPE_LAUNCH_CHECK();
}

DeviceStepHealth DeviceBank::step_health() const {
  return DeviceStepHealth{impl_->health_rows.get(), impl_->mass_bits.get(), impl_->crossings.get()};
}

const std::uint32_t* DeviceBank::status_word() const {
  return impl_->status.get();
}
const std::uint32_t* DeviceBank::first_fire_word() const {
  return impl_->status.get() + 1;
}
const int* DeviceBank::step_word() const {
  return impl_->step.get();
}

}  // namespace nanscope::cuda
