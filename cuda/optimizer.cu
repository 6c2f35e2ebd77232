#include <cooperative_groups.h>

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
// What an Adam update reads and writes (adam_step's arguments, on the device).
struct AdamArgs {
  float* grads;
  float* params;
  float* m_all;
  float* v_all;
  double max_norm;
  float b1, b2;
  const double* corrections;
  double eps;
  AdamGuard guard;
  float* sp_all;  // the shadow copies (null: none)
  float* sm_all;
  float* sv_all;
  AdamChecks checks;
  float* delta;
};

constexpr int kChunk = 4096;
constexpr int kAdamThreads = 256;

namespace {

// The norms: a sum of squares per chunk of kChunk elements of an entry, a fixed tree per chunk
// (double); then the fold: thread e sums entry e's chunks in order (the entries side by side: one
// thread's chain of loads from global memory is slow), thread 0 the entries into their groups in
// the layout's order, then the global norm (as the CPU: sqrt of the summed squares). The
// one-thread order of every sum, so the norms do not depend on how the blocks run.
constexpr int kSumsqThreads = 256;
static_assert(kSumsqThreads >= kMaxEntries, "a thread per entry in the fold");

// Chunk c's sum of squares by the whole block (thread 0 gets it).
__device__ __forceinline__ double chunk_sum(const float* grads, const EntryTable& t, int c) {
  int e = 0;
  while (c >= t.first_chunk[e + 1]) ++e;
  const size_t begin = static_cast<size_t>(c - t.first_chunk[e]) * kChunk;
  const float* g = grads + t.offset[e] + begin;
  const size_t n = min(static_cast<size_t>(kChunk), static_cast<size_t>(t.n[e]) - begin);
  double acc = 0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) acc += static_cast<double>(g[i]) * g[i];
  return block_sum<kSumsqThreads>(acc);
}

// The fold of every chunk's sum (written by other blocks: loaded past L1) into the norms, by the
// whole block: thread 0 returns the global norm and, with `norms`, writes all of them there.
__device__ __forceinline__ float fold_norms(const EntryTable& t, const double* chunk_sq, float* norms) {
  __shared__ double entry_sq[kMaxEntries];
  const int k = static_cast<int>(threadIdx.x);
  __syncthreads();  // an earlier fold's readers are done with entry_sq
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
  if (threadIdx.x != 0) return 0.f;
  double group[kGroupCount] = {0, 0, 0, 0, 0, 0, 0};
  for (int x = 0; x < t.count; ++x) group[t.group[x]] += entry_sq[x];
  double global = 0;
  for (int gi = 0; gi < kGroupCount; ++gi) {
    global += group[gi];
    if (norms) norms[1 + gi] = static_cast<float>(sqrt(group[gi]));
  }
  const float global_norm = static_cast<float>(sqrt(global));
  if (norms) norms[0] = global_norm;
  return global_norm;
}

// One block per chunk, every entry in one launch; the last block to finish (a fence, then an
// arrival count) folds.
__global__ void grad_norms_kernel(const float* __restrict__ grads, EntryTable t,
                                  double* __restrict__ chunk_sq,
                                  unsigned int* __restrict__ arrivals, float* __restrict__ norms) {
  const double sum = chunk_sum(grads, t, static_cast<int>(blockIdx.x));
  __shared__ bool last;
  if (threadIdx.x == 0) {
    chunk_sq[blockIdx.x] = sum;
    __threadfence();  // the chunk's sum is visible before its arrival is counted
    last = atomicAdd(arrivals, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  fold_norms(t, chunk_sq, norms);
  if (threadIdx.x == 0) *arrivals = 0u;  // ready for the next launch
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

// Adam over block `vb` of the entries' blocks (first_block: an entry's), with the entry's own
// learning rate and the global gradient norm `norm`: the same arithmetic per element as one
// launch per entry. With sinks on, the values each thread leaves (updated, or as they were when
// the guard skips) are checked on the way out: the warp votes, and only a warp holding a
// non-finite value touches the bank. The whole block calls it.
__device__ __forceinline__ void adam_block(const AdamArgs& a, const EntryTable& table, int vb, float norm) {
  int e = 0;
  while (vb >= table.first_block[e + 1]) ++e;
  const size_t n = table.n[e];
  const size_t i = static_cast<size_t>(vb - table.first_block[e]) * blockDim.x + threadIdx.x;
  const bool in = i < n;
  const size_t o = table.offset[e];
  float* g = a.grads + o;
  float* p = a.params + o;
  float* m = a.m_all + o;
  float* v = a.v_all + o;
  float pi = 0.f, mi = 0.f, vi = 0.f;
  if (in) {
    pi = p[i];
    mi = m[i];
    vi = v[i];
    if (a.sp_all) {
      a.sp_all[o + i] = pi;
      a.sm_all[o + i] = mi;
      a.sv_all[o + i] = vi;
    }
  }
  if (in && !guarded(a.guard)) {
    const double lr = table.lr[e];
    const double bc1 = a.corrections[0];
    const double bc2 = a.corrections[1];
    float gi = g[i];
    if (a.max_norm > 0) {
      const double global = norm;
      const double scale = global <= a.max_norm ? 1.0 : a.max_norm / global;  // NaN -> NaN scale
      if (!(scale == 1.0)) gi = static_cast<float>(gi * scale);
      g[i] = gi;
    }
    const float b1 = a.b1, b2 = a.b2;
    mi = b1 * mi + (1.f - b1) * gi;
    vi = b2 * vi + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const double step =
        (static_cast<double>(mi) / bc1) / (sqrt(static_cast<double>(vi) / bc2) + a.eps);
    const float before = pi;
    pi = static_cast<float>(pi - lr * step);
    p[i] = pi;
    if (a.delta) a.delta[o + i] = static_cast<float>(static_cast<double>(pi) - before);
  } else if (in && a.delta) {
    a.delta[o + i] = 0.f;
  }
  // Padding between entries is never written and stays zero, so the entries' values are the slots'.
  if (a.checks.moments.records) {
    const unsigned km = nonfinite_kind(mi), kv = nonfinite_kind(vi);
    note_in_producer(a.checks.moments, km | kv, (km != 0u) + (kv != 0u));
  }
  if (a.checks.params.records) {
    const unsigned kp = nonfinite_kind(pi);
    note_in_producer(a.checks.params, kp, kp != 0u);
  }
}

// Adam over every entry in one launch, each block one entry's; the norms as grad_norms left them.
__global__ void __launch_bounds__(kAdamThreads)
    adam_kernel(AdamArgs a, EntryTable table, const float* norms) {
  adam_block(a, table, static_cast<int>(blockIdx.x), norms ? __ldcg(norms) : 0.f);
}

// grad_norms_kernel then adam_kernel in one cooperative launch (every block resident): the
// chunks' sums, a grid-wide barrier, then every block folds them itself (the same order: the same
// bits; block 0 also writes the norms) and updates its share of Adam's blocks. One node on the
// step's path instead of two, and no barrier between the fold and the update.
static_assert(kAdamThreads == kSumsqThreads, "the norms and the update share a block shape");
__global__ void __launch_bounds__(kAdamThreads)
    norms_adam_kernel(AdamArgs a, EntryTable table, double* chunk_sq, float* norms) {
  for (int c = blockIdx.x; c < table.first_chunk[table.count]; c += gridDim.x) {
    const double sum = chunk_sum(a.grads, table, c);
    if (threadIdx.x == 0) chunk_sq[c] = sum;
  }
  cooperative_groups::this_grid().sync();
  __shared__ float global_norm;
  const float folded = fold_norms(table, chunk_sq, blockIdx.x == 0 ? norms : nullptr);
  if (threadIdx.x == 0) global_norm = folded;
  __syncthreads();
  const float norm = global_norm;
  for (int vb = blockIdx.x; vb < table.first_block[table.count]; vb += gridDim.x)
    adam_block(a, table, vb, norm);
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

namespace {
__global__ void cooperative_probe_kernel(int* out) {
  cooperative_groups::this_grid().sync();
  if (threadIdx.x == 0) out[blockIdx.x] = 1;
}

// Whether this device and driver run a cooperative launch captured in a graph: one tiny capture
// on a stream of its own, instantiated and run; any error (cleared) means no.
bool cooperative_graphs_work() {
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return false;
  int* out = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool ok = cudaMalloc(&out, 2 * sizeof(int)) == cudaSuccess &&
            cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (ok) {
    void* args[] = {&out};
    const bool launched =
        cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(cooperative_probe_kernel),
                                    dim3(2), dim3(32), args, 0, s) == cudaSuccess;
    ok = cudaStreamEndCapture(s, &graph) == cudaSuccess && launched;
  }
  ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess &&
       cudaGraphLaunch(exec, s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess;
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  cudaFree(out);
  cudaStreamDestroy(s);
  cudaGetLastError();  // a refused launch leaves nothing sticky behind
  return ok;
}

// The blocks of norms_and_adam_step's launch: every block resident at once; 0 where the device
// cannot run it in a graph.
int cooperative_grid() {
  int device = 0, cooperative = 0, sms = 0, per_sm = 0;
  NANSCOPE_CUDA_CHECK(cudaGetDevice(&device));
  NANSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  NANSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  NANSCOPE_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, norms_adam_kernel, kAdamThreads, 0));
  return cooperative && cooperative_graphs_work() ? sms * per_sm : 0;
}
}  // namespace

DeviceOptimizer::DeviceOptimizer(const ParamLayout& layout, const OptimConfig& optim,
                                 cudaStream_t stream)
    : layout_(layout),
      optim_(optim),
      stream_(stream),
      table_(std::make_unique<EntryTable>(entry_table(layout, optim))),
      entry_sq_(static_cast<std::size_t>(table_->first_chunk[table_->count])),
      cooperative_grid_(cooperative_grid()) {
  NANSCOPE_CUDA_CHECK(cudaMemset(arrivals_.get(), 0, sizeof(unsigned int)));
}

DeviceOptimizer::~DeviceOptimizer() = default;

void DeviceOptimizer::norms_of(const float* grads, float* norms) {
  const EntryTable& t = *table_;
  grad_norms_kernel<<<static_cast<unsigned>(t.first_chunk[t.count]), kSumsqThreads, 0, stream_>>>(
      grads, t, entry_sq_.get(), arrivals_.get(), norms);
  NANSCOPE_LAUNCH_CHECK();
}

AdamArgs DeviceOptimizer::adam_args(float* grads, float* params, float* adam,
                                    const AdamGuard& guard, const AdamShadow& shadow,
                                    const AdamChecks& checks, float* delta) const {
  const std::size_t total = layout_.total();
  return AdamArgs{grads,
                  params,
                  adam,
                  adam + total,
                  optim_.max_grad_norm,
                  static_cast<float>(optim_.beta1),
                  static_cast<float>(optim_.beta2),
                  corrections_.get(),
                  optim_.eps,
                  guard,
                  shadow.params,
                  shadow.adam,
                  shadow.adam ? shadow.adam + total : nullptr,
                  checks,
                  delta};
}

void DeviceOptimizer::adam_step(float* grads, float* params, float* adam, const float* norms,
                                std::int64_t* t, const AdamGuard& guard, const AdamShadow& shadow,
                                const AdamChecks& checks, float* delta, bool t_advanced) {
  auto s = stream_;
  if (!t_advanced) advance_t(t, guard, shadow, s);
  const EntryTable& table = *table_;
  const auto blocks = static_cast<unsigned>(table.first_block[table.count]);
  if (blocks == 0) return;
  adam_kernel<<<blocks, kAdamThreads, 0, s>>>(
      adam_args(grads, params, adam, guard, shadow, checks, delta), table, norms);
  NANSCOPE_LAUNCH_CHECK();
}

bool DeviceOptimizer::norms_and_adam_step(float* grads, float* norms, float* params, float* adam,
                                          const AdamGuard& guard, const AdamShadow& shadow,
                                          const AdamChecks& checks, float* delta) {
  if (guard.status || guard.norms) return false;  // the guard reads the norms between the two
  const EntryTable& table = *table_;
  const int work = std::max(table.first_chunk[table.count], table.first_block[table.count]);
  if (cooperative_grid_ == 0 || work == 0) return false;
  AdamArgs a = adam_args(grads, params, adam, guard, shadow, checks, delta);
  EntryTable t = table;
  double* chunk_sq = entry_sq_.get();
  void* args[] = {&a, &t, &chunk_sq, &norms};
  NANSCOPE_CUDA_CHECK(
      cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(norms_adam_kernel),
                                  dim3(static_cast<unsigned>(std::min(work, cooperative_grid_))),
                                  dim3(kAdamThreads), args, 0, stream_));
  return true;
}

void DeviceOptimizer::advance_t(std::int64_t* t, const AdamGuard& guard, const AdamShadow& shadow,
                                cudaStream_t stream) {
  advance_t_kernel<<<1, 1, 0, stream>>>(t, guard, shadow.t, optim_.beta1, optim_.beta2,
                                        corrections_.get());
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
