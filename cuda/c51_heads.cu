#include "c51_heads.h"

#include <algorithm>

namespace nanscope::cuda {
namespace {

__device__ int branch_of(const Dims& bd, int a) {
  return a < bd.off[1] ? 0 : (a < bd.off[2] ? 1 : 2);
}

// One warp per (b, a) row of atoms (kAggregateRows rows a block): l_i = v_i + adv_{a,i} -
// mean_{a' in branch} adv_{a',i}, then log_softmax with the engine's rules (a NaN row stays NaN;
// shift 0 when the maximum is infinite). The row's arithmetic is that of a 128-thread block per row
// (the kernel's earlier form, whose values the golden runs hold): the maximum is the row's first
// greatest value (the sign of a zero included), and the sum of exponentials is that block's tree
// over 128 slots, slot t holding atoms t, t + 128, ... in order, then slot t += slot t + s for s =
// 64, 32, ..., 1. A lane keeps slots lane, lane + 32, lane + 64 and lane + 96, so the tree's first
// two levels are in registers and the rest are shuffles down.
constexpr int kAggregateRows = 4;
constexpr int kSumSlots = 128;

__global__ void aggregate_log_softmax(Dims bd, int rows, const float* __restrict__ v,
                                      const float* __restrict__ adv, float* __restrict__ logp) {
  extern __shared__ float logits[];  // kAggregateRows rows of NA logits
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int r = static_cast<int>(blockIdx.x) * kAggregateRows + warp;
  if (r >= rows) return;  // the whole warp
  float* row = logits + warp * bd.NA;
  const int b = r / bd.A, a = r % bd.A;
  const int br = branch_of(bd, a);
  const float* adv_b = adv + static_cast<size_t>(b) * bd.A * bd.NA;
  bool nan = false;
  for (int i = lane; i < bd.NA; i += 32) {
    double mean = 0;
    for (int k = 0; k < bd.sub[br]; ++k) mean += adv_b[(bd.off[br] + k) * bd.NA + i];
    mean /= bd.sub[br];
    const float l =
        v[static_cast<size_t>(b) * bd.NA + i] + adv_b[a * bd.NA + i] - static_cast<float>(mean);
    row[i] = l;
    nan = nan || isnan(l);
  }
  __syncwarp();
  float* out = logp + static_cast<size_t>(r) * bd.NA;
  if (__any_sync(0xffffffffu, nan)) {
    for (int i = lane; i < bd.NA; i += 32) out[i] = __int_as_float(0x7fc00000);
    return;
  }
  // The first greatest value: a lane's first in its atoms, then the lower index among equals.
  float m = row[0];
  int at = 0;
  for (int i = lane; i < bd.NA; i += 32)
    if (row[i] > m) {
      m = row[i];
      at = i;
    }
  for (int s = 16; s > 0; s >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, s);
    const int oat = __shfl_xor_sync(0xffffffffu, at, s);
    if (om > m || (om == m && oat < at)) {
      m = om;
      at = oat;
    }
  }
  const float shift = isinf(m) ? 0.f : m;
  double slot[kSumSlots / 32] = {};
  for (int j = 0; j < kSumSlots / 32; ++j)
    for (int i = lane + 32 * j; i < bd.NA; i += kSumSlots)
      slot[j] += exp(static_cast<double>(row[i] - shift));
  slot[0] += slot[2];  // s = 64
  slot[1] += slot[3];
  double acc = slot[0] + slot[1];  // s = 32
  for (int s = 16; s > 0; s >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, s);
  acc = __shfl_sync(0xffffffffu, acc, 0);
  const float lse = static_cast<float>(static_cast<double>(shift) + log(acc));
  for (int i = lane; i < bd.NA; i += 32) out[i] = row[i] - lse;
}

__global__ void expected_q_kernel(Dims bd, double v_min, double dz, int rows,
                                  const float* __restrict__ logp, float* __restrict__ q) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;  // (b, a)
  if (r >= rows) return;
  double acc = 0;
  for (int i = 0; i < bd.NA; ++i)
    acc += (v_min + i * dz) * static_cast<double>(expf(logp[static_cast<size_t>(r) * bd.NA + i]));
  q[r] = static_cast<float>(acc);
}

// A branch's greedy sub-action from its Q values: the first greatest, -1 when one is NaN.
__device__ __forceinline__ int greedy_of(const float* row, int sub) {
  int best = 0;
  for (int a = 0; a < sub; ++a) {
    if (isnan(row[a])) return -1;
    if (row[a] > row[best]) best = a;
  }
  return best;
}

__global__ void greedy_kernel(Dims bd, int B, const float* __restrict__ q,
                              std::int32_t* __restrict__ astar) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, d)
  if (t >= B * bd.D) return;
  const int b = t / bd.D, br = t % bd.D;
  astar[t] = greedy_of(q + static_cast<size_t>(b) * bd.A + bd.off[br], bd.sub[br]);
}

// expected_q_kernel then greedy_kernel in one launch (the online network on s': its Q values only
// pick the greedy sub-actions): one thread per (b, a) row as in expected_q_kernel, a sample's rows
// in one block (kGreedySamples samples a block), then one thread per (b, d) picks from the block's
// Q values in shared memory as greedy_kernel does. The same Q values and actions bit for bit.
constexpr int kGreedySamples = 4;  // a warp's rows a block (8 sub-actions): many SMs at work
constexpr int kGreedyThreads = 32;

__global__ void expected_q_greedy_kernel(Dims bd, double v_min, double dz, int B,
                                         const float* __restrict__ logp, float* __restrict__ q,
                                         std::int32_t* __restrict__ astar) {
  extern __shared__ float block_q[];  // kGreedySamples * A
  const int first = static_cast<int>(blockIdx.x) * kGreedySamples;
  const int samples = min(kGreedySamples, B - first);
  const int rows = samples * bd.A;
  for (int k = static_cast<int>(threadIdx.x); k < rows; k += blockDim.x) {
    const int r = first * bd.A + k;  // (b, a)
    double acc = 0;
    for (int i = 0; i < bd.NA; ++i)
      acc += (v_min + i * dz) * static_cast<double>(expf(logp[static_cast<size_t>(r) * bd.NA + i]));
    const float v = static_cast<float>(acc);
    q[r] = v;
    block_q[k] = v;
  }
  __syncthreads();
  for (int k = static_cast<int>(threadIdx.x); k < samples * bd.D; k += blockDim.x) {
    const int b = k / bd.D, br = k % bd.D;
    astar[first * bd.D + k] = greedy_of(block_q + b * bd.A + bd.off[br], bd.sub[br]);
  }
}

__device__ __forceinline__ float clampf_nan(float x, float lo, float hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// One block per (b, d) row, a thread per atom i: the row's target atoms tz_j (clamped) and target
// probabilities exp(logp_j) are made once into shared memory instead of once per i; each thread
// then sums its atom's share over j in order, with the arithmetic of one thread per (b, d, i)
// doing it all, so m is the same bit for bit.
__global__ void projection_kernel(Dims bd, float v_min, float v_max, double dz, float gamma_n,
                                  const float* __restrict__ tlp,
                                  const std::int32_t* __restrict__ astar,
                                  const float* __restrict__ ret, const float* __restrict__ done,
                                  float* __restrict__ m) {
  extern __shared__ float row_terms[];  // tz[NA], then p[NA]
  float* tz = row_terms;
  float* p = row_terms + bd.NA;
  const int b = static_cast<int>(blockIdx.x) / bd.D, br = static_cast<int>(blockIdx.x) % bd.D;
  const int a = astar[b * bd.D + br];
  float* out = m + static_cast<size_t>(blockIdx.x) * bd.NA;
  if (a < 0) {
    for (int i = threadIdx.x; i < bd.NA; i += blockDim.x) out[i] = __int_as_float(0x7fc00000);
    return;
  }
  const float disc = gamma_n * (1.f - done[b]);
  const float* row = tlp + (static_cast<size_t>(b) * bd.A + bd.off[br] + a) * bd.NA;
  for (int j = threadIdx.x; j < bd.NA; j += blockDim.x) {
    tz[j] = clampf_nan(ret[b] + disc * static_cast<float>(v_min + j * dz), v_min, v_max);
    p[j] = expf(row[j]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < bd.NA; i += blockDim.x) {
    const double zi = v_min + i * dz;
    double acc = 0;
    for (int j = 0; j < bd.NA; ++j) {
      const double w = 1.0 - fabs(static_cast<double>(tz[j]) - zi) / dz;
      const double c = w < 0.0 ? 0.0 : (w > 1.0 ? 1.0 : w);  // NaN passes, as in nan_ops::clamp
      acc += c * static_cast<double>(p[j]);
    }
    out[i] = static_cast<float>(acc);
  }
}

}  // namespace

NetBuffers::NetBuffers(const Dims& d)
    : pre1(static_cast<std::size_t>(d.B) * d.H),
      h1(pre1.size()),
      pre2(pre1.size()),
      h2(pre1.size()),
      z(static_cast<std::size_t>(d.B) * d.Z),
      v(static_cast<std::size_t>(d.B) * d.NA),
      adv(static_cast<std::size_t>(d.B) * d.A * d.NA),
      logp(adv.size()) {}

void net_forward(Blas& blas, const Dims& d, const ParamLayout& L, const float* p, const float* x,
                 NetBuffers& o, const SlotHook& hook) {
  cudaStream_t s = blas.stream();
  auto at_slot = [&](int slot) {
    if (hook) hook(slot);
  };
  auto at = [&](ParamId id) { return p + L[id].offset; };
  auto layer = [&](int n, int k, const float* in, ParamId w, ParamId b, float* pre, float* out) {
    LayerGemm g = product(false, false, d.B, n, k, in, at(w), pre);
    g.bias = at(b);
    g.relu_out = out;
    blas.layer(g);
  };
  layer(d.H, d.F, x, kEncW1, kEncB1, o.pre1.get(), o.h1.get());
  at_slot(kHS1);
  layer(d.H, d.H, o.h1.get(), kEncW2, kEncB2, o.pre2.get(), o.h2.get());
  at_slot(kHS2);
  layer(d.Z, d.H, o.h2.get(), kBnW, kBnB, o.z.get(), nullptr);
  at_slot(kBnZ);
  layer(d.NA, d.Z, o.z.get(), kValW, kValB, o.v.get(), nullptr);
  at_slot(kValueLogits);
  layer(d.A * d.NA, d.Z, o.z.get(), kAdvW, kAdvB, o.adv.get(), nullptr);
  at_slot(kAdvLogits);
  const int rows = d.B * d.A;
  aggregate_log_softmax<<<(rows + kAggregateRows - 1) / kAggregateRows, 32 * kAggregateRows,
                          kAggregateRows * d.NA * sizeof(float), s>>>(d, rows, o.v.get(),
                                                                      o.adv.get(), o.logp.get());
  NANSCOPE_LAUNCH_CHECK();
  at_slot(kLogProbs);
}

void expected_q(const Dims& d, const float* logp, float* q, cudaStream_t stream) {
  const int rows = d.B * d.A;
  expected_q_kernel<<<(rows + 127) / 128, 128, 0, stream>>>(d, d.v_min, d.dz, rows, logp, q);
  NANSCOPE_LAUNCH_CHECK();
}

void greedy_actions(const Dims& d, const float* q, std::int32_t* astar, cudaStream_t stream) {
  const int n = d.B * d.D;
  greedy_kernel<<<(n + 127) / 128, 128, 0, stream>>>(d, d.B, q, astar);
  NANSCOPE_LAUNCH_CHECK();
}

void expected_q_greedy(const Dims& d, const float* logp, float* q, std::int32_t* astar,
                       cudaStream_t stream) {
  const int blocks = (d.B + kGreedySamples - 1) / kGreedySamples;
  expected_q_greedy_kernel<<<blocks, kGreedyThreads, kGreedySamples * d.A * sizeof(float),
                             stream>>>(d, d.v_min, d.dz, d.B, logp, q, astar);
  NANSCOPE_LAUNCH_CHECK();
}

void c51_projection(const Dims& d, const float* tlp, const std::int32_t* astar, const float* ret,
                    const float* done, float* m, cudaStream_t stream) {
  const int threads = std::min(((d.NA + 31) / 32) * 32, 256);
  projection_kernel<<<d.B * d.D, threads, 2 * d.NA * sizeof(float), stream>>>(
      d, static_cast<float>(d.v_min), static_cast<float>(d.v_max), d.dz,
      static_cast<float>(d.gamma_n), tlp, astar, ret, done, m);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
