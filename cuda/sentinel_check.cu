#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "device_array.h"
#include "fused_check.cuh"
#include "fused_tables.h"
#include "health_reduce.cuh"
#include "reduce.cuh"
#include "sentinel_check.h"
#include "slot_note.cuh"

namespace nanscope::cuda {
namespace {

using fused::kThreads;
using fused::kUnroll;
// The most blocks one fused launch has: items share them when there are many (each thread then
// loops over more of its item), which bounds the launch's block map (fused_tables.h).
constexpr unsigned kMaxLaunchBlocks = 16384;
// The health partials of every slot together (each slot its own area of one partial per block of
// its check): a wide bank gives each item fewer blocks rather than more memory.
constexpr std::size_t kHealthPartialBytes = std::size_t{32} << 20;
// The copies of producer-checked slots one copy_first_fires launch makes (its table travels by
// value: the built-in trainer's few producers).
constexpr int kLateCopiesMax = 64;

// The largest table of a launch of `slots` distinct items (fused_tables.h), and the device memory
// a bank gives its tables: room for many distinct lists before any is recycled.
std::size_t table_chunk_bytes(int slots) {
  const std::size_t items = static_cast<std::size_t>(slots);
  const std::size_t largest =
      items * sizeof(FusedItem) + std::max<std::size_t>(items, kMaxLaunchBlocks) * sizeof(unsigned);
  return std::max<std::size_t>(std::size_t{1} << 20, 16 * largest);
}

// One thread per health word (`words` = slots x kHealthFieldCount, over as many blocks as it
// takes): the step's health starts unmeasured. A negative `step` is counted on the device
// (begin_counted_step): the next row, the last row at most, and one more step begun.
__global__ void begin_step_kernel(int step, int last_row, int* step_ptr, unsigned int* status,
                                  float* health, unsigned words, unsigned int* mass_bits,
                                  unsigned slots, unsigned long long* crossings) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
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
  if (i < words) health[i] = __int_as_float(0x7fc00000);
  if (i < slots) mass_bits[i] = 0u;
}

// The capture copies of slots their producers checked: a producer cannot copy its buffer at the
// first fire (other warps are still writing it), so this runs after it, in stream order, and copies
// the buffers whose slot fired for the first time in this step. While clean it reads one word.
struct LateCopies {
  int count;
  int slot[kLateCopiesMax];
  const float* src[kLateCopiesMax];
  float* dst[kLateCopiesMax];
  unsigned long long n[kLateCopiesMax];
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

__global__ void clear_records(DeviceSlotRecord* rec, int slots) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < slots; i += gridDim.x * blockDim.x)
    rec[i] = DeviceSlotRecord{0u, -1, 0, -1, 0};
}

unsigned blocks_for(std::size_t threads) {
  return static_cast<unsigned>((threads + kThreads - 1) / kThreads);
}

}  // namespace

// The bank's device memory, each array freed by its own destructor (also when a later allocation
// in the constructor fails).
struct DeviceBank::Impl {
  int max_steps;
  std::size_t row_bytes;  // history_row_bytes(slots)
  DeviceArray<DeviceSlotRecord> records;
  DeviceArray<unsigned char> history;   // [max_steps, row_bytes]
  DeviceArray<unsigned int> status{3};  // the status word, the first-fire word, steps begun
  DeviceArray<int> step{1};             // the current step, for the checks' history row
  unsigned blocks_per_item = 0;         // the most blocks one item gets in a fused check
  unsigned sms = 0;
  // The step's health (see DeviceStepHealth) and the fused check's partials.
  DeviceArray<float> health_rows;
  DeviceArray<unsigned int> mass_bits;
  DeviceArray<unsigned long long> crossings{2};
  DeviceArray<DeviceHealthSums> partials;
  DeviceArray<unsigned int> arrivals;
  // The capture arena (BankShape::capture_floats) and where each slot's copy is in it.
  DeviceArray<float> arena;
  DeviceArray<unsigned long long> arena_used;
  DeviceArray<unsigned long long> arena_at;
  FusedTables tables;
  std::string table_bytes;     // the launch's table as built on the host
  std::vector<unsigned> seen;  // per slot: the launch that last held it (duplicates split)
  unsigned launch = 0;
  Impl(const BankShape& s)
      : max_steps(s.steps),
        row_bytes(history_row_bytes(s.slots)),
        records(static_cast<std::size_t>(s.slots)),
        history(static_cast<std::size_t>(s.steps) * row_bytes),
        health_rows(static_cast<std::size_t>(s.slots) * kHealthFieldCount),
        mass_bits(static_cast<std::size_t>(s.slots)),
        arrivals(static_cast<std::size_t>(s.slots)),
        arena(s.capture_floats),
        arena_used(s.capture_floats ? 1 : 0),
        arena_at(s.capture_floats ? static_cast<std::size_t>(s.slots) : 0),
        tables(table_chunk_bytes(s.slots)),
        seen(static_cast<std::size_t>(s.slots), 0u) {}
  fused::CaptureArena capture_arena() {
    return arena.size()
               ? fused::CaptureArena{arena.get(), arena.size(), arena_used.get(), arena_at.get()}
               : fused::CaptureArena{};
  }
};

int device_sm_count() {
  int dev = 0, sms = 0;
  NANSCOPE_CUDA_CHECK(cudaGetDevice(&dev));
  NANSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

namespace {
BankShape checked_shape(const BankShape& s) {
  if (s.slots < 1 || s.slots > kMaxSlots || s.steps < 1)
    throw InternalError("DeviceBank: a bank of 1 to kMaxSlots slots and at least one row");
  return s;
}
}  // namespace

DeviceBank::DeviceBank(const BankShape& shape, cudaStream_t stream)
    : shape_(checked_shape(shape)),
      impl_(std::make_unique<Impl>(shape_)),
      stream_(stream),
      health_(shape.health) {
  const auto slots = static_cast<std::size_t>(shape_.slots);
  NANSCOPE_CUDA_CHECK(cudaMemset(impl_->step.get(), 0, sizeof(int)));
  NANSCOPE_CUDA_CHECK(cudaMemset(impl_->arrivals.get(), 0, slots * sizeof(unsigned int)));
  impl_->sms = static_cast<unsigned>(device_sm_count());
  impl_->blocks_per_item = 4 * impl_->sms;
  // Each slot its own partials (check_group gives an item at most blocks_per_item blocks).
  if (health_) {
    impl_->blocks_per_item = static_cast<unsigned>(std::clamp<std::size_t>(
        kHealthPartialBytes / (slots * sizeof(DeviceHealthSums)), 1, impl_->blocks_per_item));
    impl_->partials = DeviceArray<DeviceHealthSums>(slots * impl_->blocks_per_item);
  }
  reset_fold();
  begin_step(0);
}

DeviceBank::~DeviceBank() = default;

void DeviceBank::check_slot(int slot, const char* who) const {
  if (slot < 0 || slot >= shape_.slots)
    throw InternalError(std::string(who) + ": slot " + std::to_string(slot) +
                        " is not in the bank's " + std::to_string(shape_.slots));
}

void DeviceBank::check_group(const std::vector<GroupItem>& items, cudaStream_t stream) {
  // A slot twice in one launch would have two warps writing its record: the list is launched in
  // runs of distinct slots instead, in its order.
  std::size_t begin = 0;
  unsigned run = ++impl_->launch;
  for (std::size_t i = 0; i < items.size(); ++i) {
    check_slot(items[i].slot, "DeviceBank::check_group");
    unsigned& seen = impl_->seen[static_cast<std::size_t>(items[i].slot)];
    if (seen == run) {
      launch_group(items.data() + begin, i - begin, stream);
      begin = i;
      run = ++impl_->launch;
    }
    seen = run;
  }
  launch_group(items.data() + begin, items.size() - begin, stream);
}

void DeviceBank::launch_group(const GroupItem* items, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  // Execution positions: an item's own (reserved with take_exec) as it is, the others counted from
  // the launch's first (`exec_base`, a kernel parameter), in the list's order, so that the table of
  // a list is the same at every step whatever ran before it, and is found again.
  const int exec_base = exec_;
  int relative = 0;
  std::vector<int> exec(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (items[i].count >= (std::size_t{1} << 31))  // indices and a warp's count are 32-bit
      throw InternalError(
          "DeviceBank: a buffer too large for the fused check (2^31 values or more)");
    if (items[i].type == ElementType::Float64)
      throw InternalError("DeviceBank: float64 buffers are checked on the host only");
    exec[i] = items[i].exec >= 0 ? items[i].exec : -1 - relative++;
  }
  exec_ += relative;
  // One kernel a element type present (each compiled for its type alone: a kernel of all three
  // would spill its registers), in the order float32, bfloat16, float16, with the positions above.
  for (const ElementType type :
       {ElementType::Float32, ElementType::BFloat16, ElementType::Float16}) {
    std::vector<std::size_t> of_type;
    for (std::size_t i = 0; i < count; ++i)
      if (items[i].type == type) of_type.push_back(i);
    if (!of_type.empty()) launch_typed(items, exec, of_type, exec_base, type, stream);
  }
}

void DeviceBank::launch_typed(const GroupItem* items, const std::vector<int>& exec,
                              const std::vector<std::size_t>& which, int exec_base,
                              ElementType type, cudaStream_t stream) {
  const std::size_t count = which.size();
  // Blocks per item: enough for one unrolled round of loads per thread, at most blocks_per_item;
  // when the launch would pass kMaxLaunchBlocks, each item's share in proportion to what it wants
  // (at least one; each thread then loops). Any grid gives the same records.
  const std::size_t per_block_bytes = static_cast<std::size_t>(kThreads) * 16 * kUnroll;
  const std::size_t value_bytes = type == ElementType::Float32 ? 4 : 2;
  std::vector<std::size_t> want(count);
  std::size_t wanted = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t bytes = items[which[k]].count * value_bytes;
    want[k] = std::min<std::size_t>(
        std::max<std::size_t>((bytes + per_block_bytes - 1) / per_block_bytes, 1),
        impl_->blocks_per_item);
    wanted += want[k];
  }
  std::vector<FusedItem> table(count);
  unsigned blocks = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const GroupItem& it = items[which[k]];
    const std::size_t share = wanted <= kMaxLaunchBlocks
                                  ? want[k]
                                  : std::max<std::size_t>(want[k] * kMaxLaunchBlocks / wanted, 1);
    table[k] = FusedItem{it.data,
                         it.count,
                         it.capture,
                         it.slot,
                         exec[which[k]],
                         blocks,
                         static_cast<unsigned>(share),
                         static_cast<unsigned>(it.type),
                         0u};
    blocks += static_cast<unsigned>(share);
  }
  std::string& bytes = impl_->table_bytes;
  bytes.resize(count * sizeof(FusedItem) + blocks * sizeof(unsigned));
  std::memcpy(bytes.data(), table.data(), count * sizeof(FusedItem));
  auto* block_item = reinterpret_cast<unsigned*>(bytes.data() + count * sizeof(FusedItem));
  for (std::size_t k = 0; k < count; ++k)
    std::fill_n(block_item + table[k].first_block, table[k].blocks, static_cast<unsigned>(k));
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const cudaError_t asked = cudaStreamIsCapturing(stream, &capture);
  if (asked == cudaErrorStreamCaptureImplicit) {
    // The legacy stream while another stream captures in global mode: the launch will say so.
    cudaGetLastError();
    capture = cudaStreamCaptureStatusActive;
  } else {
    NANSCOPE_CUDA_CHECK(asked);
  }
  const unsigned char* device =
      impl_->tables.find_or_upload(bytes, stream, capture != cudaStreamCaptureStatusNone);
  const auto* d_items = reinterpret_cast<const FusedItem*>(device);
  const auto* d_block_item = reinterpret_cast<const unsigned*>(device + count * sizeof(FusedItem));
  const auto row_bytes = static_cast<unsigned>(impl_->row_bytes);
  const HealthOut h = health_ ? HealthOut{impl_->partials.get(), impl_->blocks_per_item,
                                          impl_->arrivals.get(), impl_->health_rows.get()}
                              : HealthOut{};
  auto launch = [&](auto kernel) {
    kernel<<<blocks, kThreads, 0, stream>>>(d_items, d_block_item, exec_base, impl_->records.get(),
                                            impl_->history.get(), row_bytes, impl_->status.get(),
                                            impl_->step.get(), h, impl_->capture_arena());
  };
  using fused::check_group_kernel;
  switch (type) {
    case ElementType::BFloat16:
      health_ ? launch(check_group_kernel<true, fused::BFloat16Elements>)
              : launch(check_group_kernel<false, fused::BFloat16Elements>);
      break;
    case ElementType::Float16:
      health_ ? launch(check_group_kernel<true, fused::Float16Elements>)
              : launch(check_group_kernel<false, fused::Float16Elements>);
      break;
    default:
      health_ ? launch(check_group_kernel<true, fused::Float32Elements>)
              : launch(check_group_kernel<false, fused::Float32Elements>);
      break;
  }
  NANSCOPE_LAUNCH_CHECK();
}

void DeviceBank::launches_done() {
  impl_->tables.launches_done();
}

std::size_t DeviceBank::tables_uploaded() const {
  return impl_->tables.uploads();
}

void DeviceBank::reset_fold() {
  auto s = stream_;
  clear_records<<<std::min(blocks_for(static_cast<std::size_t>(shape_.slots)), 64u), kThreads, 0,
                  s>>>(impl_->records.get(), shape_.slots);
  NANSCOPE_LAUNCH_CHECK();
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->history.get(), 0, impl_->history.size(), s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->status.get(), 0, 3 * sizeof(unsigned int), s));
  if (impl_->arena.size()) {
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->arena_used.get(), 0, sizeof(unsigned long long), s));
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(impl_->arena_at.get(), 0xff,
                                        impl_->arena_at.size() * sizeof(unsigned long long), s));
  }
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
    NANSCOPE_CUDA_CHECK(
        cudaMemsetAsync(impl_->history.get(), 0, used_rows * impl_->row_bytes, stream));
  exec_ = 0;
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));  // the copy's source is on this stack
}

void DeviceBank::enqueue_begin_step(int step, cudaStream_t stream) {
  const auto words = static_cast<unsigned>(impl_->health_rows.size());
  begin_step_kernel<<<blocks_for(words), kThreads, 0, stream>>>(
      step, impl_->max_steps - 1, impl_->step.get(), impl_->status.get(), impl_->health_rows.get(),
      words, impl_->mass_bits.get(), static_cast<unsigned>(shape_.slots), impl_->crossings.get());
  NANSCOPE_LAUNCH_CHECK();
}

void DeviceBank::begin_counted_step(cudaStream_t stream) {
  exec_ = 0;
  enqueue_begin_step(-1, stream);
}

std::uint32_t DeviceBank::steps_begun() {
  std::uint32_t n = 0;
  NANSCOPE_CUDA_CHECK(
      cudaMemcpyAsync(&n, impl_->status.get() + 2, sizeof n, cudaMemcpyDeviceToHost, stream_));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return n;
}

std::vector<float> DeviceBank::read_health_rows() {
  std::vector<float> rows(impl_->health_rows.size());
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
  enqueue_begin_step(step, stream_);
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
  r.slots = shape_.slots;
  r.records.resize(static_cast<std::size_t>(shape_.slots));
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.records.data(), impl_->records.get(),
                                      sizeof(DeviceSlotRecord) * r.records.size(),
                                      cudaMemcpyDeviceToHost, s));
  r.history.resize(rows * impl_->row_bytes);
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(r.history.data(),
                                      impl_->history.get() + first * impl_->row_bytes,
                                      r.history.size(), cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(&r.step_status, impl_->status.get(), sizeof(unsigned int),
                                      cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  r.copies = 3;  // the records, the history rows and the status word
  return r;
}

std::vector<float> DeviceBank::captured(int slot, std::size_t count) {
  check_slot(slot, "DeviceBank::captured");
  if (!impl_->arena.size()) return {};
  unsigned long long at = ~0ull;
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(&at, impl_->arena_at.get() + slot, sizeof at,
                                      cudaMemcpyDeviceToHost, stream_));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (at == ~0ull || at + count > impl_->arena.size()) return {};
  std::vector<float> out(count);
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(out.data(), impl_->arena.get() + at, count * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return out;
}

SlotSink DeviceBank::sink(int slot, int exec) {
  check_slot(slot, "DeviceBank::sink");
  return SlotSink{impl_->records.get(),
                  impl_->history.get(),
                  impl_->status.get(),
                  impl_->step.get(),
                  slot,
                  exec >= 0 ? exec : exec_++,
                  static_cast<unsigned>(impl_->row_bytes)};
}

void DeviceBank::copy_first_fires(const std::vector<GroupItem>& items) {
  if (items.empty()) return;
  if (items.size() > static_cast<std::size_t>(kLateCopiesMax))
    throw InternalError("DeviceBank: too many capture copies");
  LateCopies c{};
  c.count = static_cast<int>(items.size());
  for (int k = 0; k < c.count; ++k) {
    const GroupItem& it = items[static_cast<std::size_t>(k)];
    check_slot(it.slot, "DeviceBank::copy_first_fires");
    c.slot[k] = it.slot;
    c.src[k] = static_cast<const float*>(it.data);  // producers write float32
    c.dst[k] = it.capture;
    c.n[k] = it.count;
  }
  // Two blocks per SM: the copy runs only in a step with a first fire.
  copy_first_fires_kernel<<<2 * impl_->sms, kThreads, 0, stream_>>>(
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
  check_slot(slot, "DeviceBank::measure_c51_rows");
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
