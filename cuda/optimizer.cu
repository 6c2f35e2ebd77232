#include <algorithm>
#include <cmath>

#include "optimizer.h"
#include "reduce.cuh"
#include "slot_note.cuh"

namespace nanscope::cuda {

// Every parameter entry's part of the layout, passed by value (a captured graph holds it).
constexpr int kMaxEntries = 64;
struct EntryTable {
  int count;
  unsigned long long offset[kMaxEntries], n[kMaxEntries];
  double lr[kMaxEntries];
  int group[kMaxEntries];            // the entry's parameter group (slot 21's per-group norms)
  int first_chunk[kMaxEntries + 1];  // an entry's chunks of kChunk elements for its sum of squares
  int first_block[kMaxEntries + 1];  // an entry's blocks of kAdamThreads elements in Adam's grid
};
constexpr int kChunk = 4096;
constexpr int kAdamThreads = 256;

namespace {

// One block per chunk of kChunk elements of an entry, every entry in one launch: a fixed tree
// per chunk (double). The last block to finish (a fence, then an arrival count) folds the chunks:
// thread e sums entry e's chunks in order (the entries side by side: one thread's chain of loads
// from global memory is slow), thread 0 the entries into their groups in the layout's order, then
// the global norm (as the CPU: sqrt of the summed squares). The one-thread order of every sum, so
// the norms do not depend on how the blocks run.
constexpr int kSumsqThreads = 256;
static_assert(kSumsqThreads >= kMaxEntries, "a thread per entry in the fold");

__global__ void grad_norms_kernel(const float* __restrict__ grads, EntryTable t,
                                  double* __restrict__ chunk_sq,
                                  unsigned int* __restrict__ arrivals, float* __restrict__ norms) {
  int e = 0;
  while (static_cast<int>(blockIdx.x) >= t.first_chunk[e + 1]) ++e;
  const size_t begin = static_cast<size_t>(blockIdx.x - t.first_chunk[e]) * kChunk;
  const float* g = grads + t.offset[e] + begin;
  const size_t n = min(static_cast<size_t>(kChunk), static_cast<size_t>(t.n[e]) - begin);
  double acc = 0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) acc += static_cast<double>(g[i]) * g[i];
  const double sum = block_sum<kSumsqThreads>(acc);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    chunk_sq[blockIdx.x] = sum;
    __threadfence();  // the chunk's sum is visible before its arrival is counted
    last = atomicAdd(arrivals, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  __shared__ double entry_sq[kMaxEntries];
  const int k = static_cast<int>(threadIdx.x);
  if (k < t.count) {
    // The entry's chunk sums in order; loaded eight at a time, so that a large entry's loads are
    // in flight together rather than one round trip to L2 per chunk.
    constexpr int kBatch = 8;
    double entry = 0;
    for (int c = t.first_chunk[k]; c < t.first_chunk[k + 1]; c += kBatch) {
      double part[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j)
        part[j] = c + j < t.first_chunk[k + 1] ? __ldcg(chunk_sq + c + j) : 0.0;
#pragma unroll
      for (int j = 0; j < kBatch; ++j)
        if (c + j < t.first_chunk[k + 1]) entry += part[j];
    }
    entry_sq[k] = entry;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  double group[kGroupCount] = {0, 0, 0, 0, 0, 0, 0};
  for (int x = 0; x < t.count; ++x) group[t.group[x]] += entry_sq[x];
  double global = 0;
  for (int gi = 0; gi < kGroupCount; ++gi) {
    global += group[gi];
    norms[1 + gi] = static_cast<float>(sqrt(group[gi]));
  }
  norms[0] = static_cast<float>(sqrt(global));
  *arrivals = 0u;  // ready for the next launch
}

// The guard (AdamGuard): a non-zero status word (the step's checks before the update) or a
// non-finite gradient norm skips the whole update on the device, t included; no host round trip,
// so it works inside a captured graph.
__device__ __forceinline__ bool guarded(const AdamGuard& g) {
  if (g.status && *g.status != 0u) return true;
  if (g.norms)
    for (int k = 0; k <= kGroupCount; ++k)
      if (!isfinite(g.norms[k])) return true;
  return false;
}

// Also Adam's bias corrections at the new t, once for every element of the update.
__global__ void advance_t_kernel(std::int64_t* t, AdamGuard guard, std::int64_t* shadow_t,
                                 double beta1, double beta2, double* corrections) {
  if (shadow_t) *shadow_t = *t;
  const bool skip = guarded(guard);
  if (guard.updated) *guard.updated = skip ? 0u : 1u;
  if (!skip) ++*t;
  corrections[0] = 1.0 - pow(beta1, static_cast<double>(*t));
  corrections[1] = 1.0 - pow(beta2, static_cast<double>(*t));
}

// Adam over every entry in one launch: each block one entry's (first_block: its blocks), with its
// own learning rate; no block without elements. Same arithmetic per element as one launch per
// entry. With sinks on, the values each
// thread leaves (updated, or as they were when the guard skips) are checked on the way out: the
// warp votes, and only a warp holding a non-finite value touches the bank.
__global__ void adam_kernel(float* __restrict__ grads, float* __restrict__ params,
                            float* __restrict__ m_all, float* __restrict__ v_all, EntryTable table,
                            const float* __restrict__ norms, double max_norm, float b1, float b2,
                            const double* __restrict__ corrections, double eps, AdamGuard guard,
                            float* __restrict__ sp_all, float* __restrict__ sm_all,
                            float* __restrict__ sv_all, AdamChecks checks,
                            float* __restrict__ delta) {
  int e = 0;
  while (static_cast<int>(blockIdx.x) >= table.first_block[e + 1]) ++e;
  const size_t n = table.n[e];
  const size_t i =
      static_cast<size_t>(blockIdx.x - table.first_block[e]) * blockDim.x + threadIdx.x;
  const bool in = i < n;
  const size_t o = table.offset[e];
  float* __restrict__ g = grads + o;
  float* __restrict__ p = params + o;
  float* __restrict__ m = m_all + o;
  float* __restrict__ v = v_all + o;
  float pi = 0.f, mi = 0.f, vi = 0.f;
  if (in) {
    pi = p[i];
    mi = m[i];
    vi = v[i];
    if (sp_all) {
      sp_all[o + i] = pi;
      sm_all[o + i] = mi;
      sv_all[o + i] = vi;
    }
  }
  if (in && !guarded(guard)) {
    const double lr = table.lr[e];
    const double bc1 = corrections[0];
    const double bc2 = corrections[1];
    float gi = g[i];
    if (max_norm > 0) {
      const double norm = norms[0];
      const double scale = norm <= max_norm ? 1.0 : max_norm / norm;  // NaN norm -> NaN scale
      if (!(scale == 1.0)) gi = static_cast<float>(gi * scale);
      g[i] = gi;
    }
    mi = b1 * mi + (1.f - b1) * gi;
    vi = b2 * vi + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const double step =
        (static_cast<double>(mi) / bc1) / (sqrt(static_cast<double>(vi) / bc2) + eps);
    const float before = pi;
    pi = static_cast<float>(pi - lr * step);
    p[i] = pi;
    if (delta) delta[o + i] = static_cast<float>(static_cast<double>(pi) - before);
  } else if (in && delta) {
    delta[o + i] = 0.f;
  }
  // Padding between entries is never written and stays zero, so the entries' values are the slots'.
  if (checks.moments.records) {
    const unsigned km = nonfinite_kind(mi), kv = nonfinite_kind(vi);
    note_in_producer(checks.moments, km | kv, (km != 0u) + (kv != 0u));
  }
  if (checks.params.records) {
    const unsigned kp = nonfinite_kind(pi);
    note_in_producer(checks.params, kp, kp != 0u);
  }
}

}  // namespace

namespace {
EntryTable entry_table(const ParamLayout& layout, const OptimConfig& o) {
  const auto entries = layout.existing();
  if (entries.size() > static_cast<std::size_t>(kMaxEntries))
    throw InternalError("DeviceOptimizer: too many parameter entries");
  EntryTable t{};
  t.count = static_cast<int>(entries.size());
  for (int e = 0; e < t.count; ++e) {
    t.offset[e] = entries[static_cast<std::size_t>(e)]->offset;
    t.n[e] = entries[static_cast<std::size_t>(e)]->count;
    t.group[e] = entries[static_cast<std::size_t>(e)]->group;
    t.lr[e] = o.lr * o.lr_mult[t.group[e]];
    t.first_chunk[e + 1] = t.first_chunk[e] + static_cast<int>(std::max<std::size_t>(
                                                  1, (t.n[e] + kChunk - 1) / kChunk));
    t.first_block[e + 1] =
        t.first_block[e] + static_cast<int>((t.n[e] + kAdamThreads - 1) / kAdamThreads);
  }
  return t;
}
}  // namespace

DeviceOptimizer::DeviceOptimizer(const ParamLayout& layout, const OptimConfig& optim,
                                 cudaStream_t stream)
    : layout_(layout),
      optim_(optim),
      stream_(stream),
      table_(std::make_unique<EntryTable>(entry_table(layout, optim))),
      entry_sq_(static_cast<std::size_t>(table_->first_chunk[table_->count])) {
  NANSCOPE_CUDA_CHECK(cudaMemset(arrivals_.get(), 0, sizeof(unsigned int)));
}

DeviceOptimizer::~DeviceOptimizer() = default;

void DeviceOptimizer::norms_of(const float* grads, float* norms) {
  const EntryTable& t = *table_;
  grad_norms_kernel<<<static_cast<unsigned>(t.first_chunk[t.count]), kSumsqThreads, 0, stream_>>>(
      grads, t, entry_sq_.get(), arrivals_.get(), norms);
  NANSCOPE_LAUNCH_CHECK();
}

void DeviceOptimizer::adam_step(float* grads, float* params, float* adam, const float* norms,
                                std::int64_t* t, const AdamGuard& guard, const AdamShadow& shadow,
                                const AdamChecks& checks, float* delta, bool t_advanced) {
  auto s = stream_;
  if (!t_advanced) advance_t(t, guard, shadow, s);
  const std::size_t total = layout_.total();
  const EntryTable& table = *table_;
  const auto blocks = static_cast<unsigned>(table.first_block[table.count]);
  if (blocks == 0) return;
  adam_kernel<<<blocks, kAdamThreads, 0, s>>>(
      grads, params, adam, adam + total, table, norms, optim_.max_grad_norm,
      static_cast<float>(optim_.beta1), static_cast<float>(optim_.beta2), corrections_.get(),
      optim_.eps, guard, shadow.params, shadow.adam, shadow.adam ? shadow.adam + total : nullptr,
      checks, delta);
  NANSCOPE_LAUNCH_CHECK();
}

void DeviceOptimizer::advance_t(std::int64_t* t, const AdamGuard& guard, const AdamShadow& shadow,
                                cudaStream_t stream) {
  advance_t_kernel<<<1, 1, 0, stream>>>(t, guard, shadow.t, optim_.beta1, optim_.beta2,
                                        corrections_.get());
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
