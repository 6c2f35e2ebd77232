// The IQN head on the device: the cosine embedding, phi and psi, the quantile layer, the greedy
// and target passes (their layers after the cosine GEMM in one kernel), the greedy actions and
// targets, the quantile Huber loss, and the captured step's targets-loss-mean launch. Declared in
// forward_losses.h with the forward's other stages.
#include "batch_mean.cuh"
#include "forward_losses.h"
#include "launch_grid.cuh"
#include "reduce.cuh"

namespace nanscope::cuda {
namespace {

constexpr float kNaN = __builtin_nanf("");

// cos(pi i tau) for i < C by the Chebyshev recurrence in double, as the CPU backend computes it. A
// block's rows are built in shared memory and written out row-major by consecutive threads, so the
// stores are coalesced (a thread writing its own row would touch a different row per lane).
constexpr int kCosRows = 64;  // rows per block (C <= kCosMaxC: checked by the launcher)
constexpr int kCosMaxC = 128;
__global__ void cos_features(const float* __restrict__ tau, int rows, int C,
                             float* __restrict__ out) {
  __shared__ float tile[kCosRows * kCosMaxC];
  const int first = blockIdx.x * kCosRows;
  const int r = first + static_cast<int>(threadIdx.x);
  if (threadIdx.x < kCosRows && r < rows) {
    float* o = tile + threadIdx.x * C;
    const double c1 = cos(3.14159265358979323846 * static_cast<double>(tau[r]));
    double prev = 1.0, cur = c1;
    o[0] = 1.f;
    if (C > 1) o[1] = static_cast<float>(c1);
    for (int i = 2; i < C; ++i) {
      const double next = 2.0 * c1 * cur - prev;
      prev = cur;
      cur = next;
      o[i] = static_cast<float>(cur);
    }
  }
  __syncthreads();
  const int count = min(kCosRows, rows - first) * C;
  float* dst = out + static_cast<size_t>(first) * C;
  for (int k = threadIdx.x; k < count; k += blockDim.x) dst[k] = tile[k];
}

// psi = h2 (broadcast over the n samples of a row) * phi; 32-bit indices (the launcher checks).
__global__ void psi_kernel(const float* __restrict__ h2, const float* __restrict__ phi, unsigned B,
                           unsigned n, unsigned H, float* __restrict__ psi) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= B * n * H) return;
  const unsigned h = t % H;
  const unsigned b = t / (n * H);
  psi[t] = h2[b * H + h] * phi[t];
}

// The greedy and target passes' layers after the cosine GEMM in one launch, psi never stored:
// psi = h2 (broadcast over the n samples of a row) * relu(x + phi_bias) (NaN passing, as
// bias_relu then psi_kernel), then q = psi Wq (+ q_bias): each output one running sum over the
// hidden units in order, a rounded multiply and an add per term, as the CPU backend's product of
// psi and Wq (layer_gemm_kernel.cuh says why that order), the bias added after it. A block's rows
// stream through shared memory in slices of the hidden units; each thread sums two of a row's
// outputs. 32-bit row indices (the launcher checks).
constexpr int kQuantileRows = 64, kQuantileSlice = 64;
static_assert(kActionTotal % 2 == 0, "quantile_out_kernel: a thread per pair of sub-actions");
constexpr int kQuantileThreads = kQuantileRows * (kActionTotal / 2);
constexpr int kQuantileLoads = kQuantileRows * kQuantileSlice / kQuantileThreads;  // per thread
static_assert(kQuantileRows * kQuantileSlice % kQuantileThreads == 0, "whole loads per thread");
__global__ void __launch_bounds__(kQuantileThreads)
    quantile_out_kernel(const float* __restrict__ x, const float* __restrict__ phi_bias,
                        const float* __restrict__ h2, const float* __restrict__ w,
                        const float* __restrict__ q_bias, unsigned rows, unsigned n, unsigned H,
                        float* __restrict__ q) {
  constexpr int kA = kActionTotal;
  __shared__ float psi[kQuantileRows][kQuantileSlice + 1];  // padded: a warp's rows in other banks
  __shared__ float2 ws[kQuantileSlice][kA / 2];
  const unsigned first = blockIdx.x * kQuantileRows;
  const unsigned row = threadIdx.x / (kA / 2), pair = threadIdx.x % (kA / 2);
  float2 acc = make_float2(0.f, 0.f);
  for (unsigned h0 = 0; h0 < H; h0 += kQuantileSlice) {
    const unsigned width = min(static_cast<unsigned>(kQuantileSlice), H - h0);
    __syncthreads();  // the last slice is summed: its stage is free
    // Every load of the slice in flight together, then psi into shared memory.
    float xv[kQuantileLoads], bv[kQuantileLoads], hv[kQuantileLoads];
#pragma unroll
    for (int it = 0; it < kQuantileLoads; ++it) {
      const unsigned e = threadIdx.x + it * kQuantileThreads;
      const unsigned r = e / kQuantileSlice, j = e % kQuantileSlice, gr = first + r;
      const bool in = gr < rows && j < width;
      const unsigned h = h0 + j;
      xv[it] = in ? x[static_cast<size_t>(gr) * H + h] : 0.f;
      bv[it] = in ? phi_bias[h] : 0.f;
      hv[it] = in ? h2[static_cast<size_t>(gr / n) * H + h] : 0.f;
    }
#pragma unroll
    for (int it = 0; it < kQuantileLoads; ++it) {
      const unsigned e = threadIdx.x + it * kQuantileThreads;
      const float v = xv[it] + bv[it];
      const float y = v < 0.f ? 0.f : v;
      psi[e / kQuantileSlice][e % kQuantileSlice] = hv[it] * y;
    }
    for (unsigned e = threadIdx.x; e < kQuantileSlice * (kA / 2); e += kQuantileThreads) {
      const unsigned j = e / (kA / 2), c = e % (kA / 2);
      ws[j][c] = j < width ? make_float2(w[static_cast<size_t>(h0 + j) * kA + 2 * c],
                                         w[static_cast<size_t>(h0 + j) * kA + 2 * c + 1])
                           : make_float2(0.f, 0.f);
    }
    __syncthreads();
    for (unsigned j = 0; j < width; ++j) {
      const float p = psi[row][j];
      const float2 wv = ws[j][pair];
      // Never contracted into an FMA (the intrinsics round each operation).
      acc.x = __fadd_rn(acc.x, __fmul_rn(p, wv.x));
      acc.y = __fadd_rn(acc.y, __fmul_rn(p, wv.y));
    }
  }
  const unsigned gr = first + row;
  if (gr >= rows) return;
  float2 out = acc;
  if (q_bias) {
    out.x += q_bias[2 * pair];
    out.y += q_bias[2 * pair + 1];
  }
  q[static_cast<size_t>(gr) * kA + 2 * pair] = out.x;
  q[static_cast<size_t>(gr) * kA + 2 * pair + 1] = out.y;
}

__global__ void iqn_greedy_kernel(Dims bd, const float* __restrict__ gq,
                                  std::int32_t* __restrict__ astar) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, d)
  if (t >= bd.B * bd.D) return;
  const int b = t / bd.D, br = t % bd.D;
  int best = 0;
  float best_v = 0;
  for (int a = 0; a < bd.sub[br]; ++a) {
    double acc = 0;
    for (int k = 0; k < bd.K; ++k)
      acc += gq[(static_cast<size_t>(b) * bd.K + k) * bd.A + bd.off[br] + a];
    const float v = static_cast<float>(acc / bd.K);
    if (isnan(v)) {
      best = -1;
      break;
    }
    if (a == 0 || v > best_v) {
      best = a;
      best_v = v;
    }
  }
  astar[t] = best;
}

__global__ void iqn_targets_kernel(Dims bd, const float* __restrict__ tq,
                                   const std::int32_t* __restrict__ astar,
                                   const float* __restrict__ ret, const float* __restrict__ done,
                                   float* __restrict__ T) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, d, j)
  if (t >= bd.B * bd.D * bd.Np) return;
  const int j = t % bd.Np, br = (t / bd.Np) % bd.D, b = t / (bd.Np * bd.D);
  const int a = astar[b * bd.D + br];
  const float disc = static_cast<float>(bd.gamma_n) * (1.f - done[b]);
  T[t] = a < 0 ? kNaN
               : ret[b] + disc * tq[(static_cast<size_t>(b) * bd.Np + j) * bd.A + bd.off[br] + a];
}

// iqn_greedy_kernel then iqn_targets_kernel in one launch, one warp per (b, d): lane a averages
// sub-action a's K greedy quantiles (with the output bias added here when `g_bias` is given: the
// step's greedy pass leaves it out of g_q, one launch fewer), every lane picks the action from the
// lanes' means as iqn_greedy_kernel does, then lanes write the targets. The same actions and
// targets bit for bit.
static_assert(kSubActions[0] <= 32 && kSubActions[1] <= 32 && kSubActions[2] <= 32,
              "greedy_targets_warp: a lane per sub-action of a branch");
__device__ __forceinline__ void greedy_targets_warp(
    const Dims& bd, int b, int br, int lane, const float* __restrict__ gq,
    const float* __restrict__ g_bias, const float* __restrict__ tq, const float* __restrict__ ret,
    const float* __restrict__ done, float* __restrict__ T) {
  float mean = 0.f;
  if (lane < bd.sub[br]) {
    const int col = bd.off[br] + lane;
    double acc = 0;
    for (int k = 0; k < bd.K; ++k) {
      float x = gq[(static_cast<size_t>(b) * bd.K + k) * bd.A + col];
      if (g_bias) x = x + g_bias[col];
      acc += x;
    }
    mean = static_cast<float>(acc / bd.K);
  }
  int best = 0;
  float best_v = 0;
  for (int a = 0; a < bd.sub[br]; ++a) {
    const float v = __shfl_sync(0xffffffffu, mean, a);
    if (best < 0) continue;  // a NaN mean ended the choice
    if (isnan(v)) {
      best = -1;
    } else if (a == 0 || v > best_v) {
      best = a;
      best_v = v;
    }
  }
  const float disc = static_cast<float>(bd.gamma_n) * (1.f - done[b]);
  for (int j = lane; j < bd.Np; j += 32)
    T[(b * bd.D + br) * bd.Np + j] =
        best < 0
            ? kNaN
            : ret[b] + disc * tq[(static_cast<size_t>(b) * bd.Np + j) * bd.A + bd.off[br] + best];
}

__global__ void iqn_greedy_targets_kernel(Dims bd, const float* __restrict__ gq,
                                          const float* __restrict__ g_bias,
                                          const float* __restrict__ tq,
                                          const float* __restrict__ ret,
                                          const float* __restrict__ done, float* __restrict__ T) {
  const int w = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  if (w >= bd.B * bd.D) return;  // the whole warp
  greedy_targets_warp(bd, w / bd.D, w % bd.D, static_cast<int>(threadIdx.x % 32), gq, g_bias, tq,
                      ret, done, T);
}

__device__ float huber(float d, float k) {
  const float a = fabsf(d);
  return a <= k ? 0.5f * d * d : k * (a - 0.5f * k);
}

// Sample b's IQN loss by one block: each (branch, i) term over the N' targets in a thread, then
// the block's thread 0 adds the terms in the order branch, i, as one thread per sample did (same
// result, bit for bit). `term` holds D * N doubles. Every thread returns (no early exit).
__device__ __forceinline__ void sample_loss_block(const Dims& bd, int b,
                                                  const float* __restrict__ q,
                                                  const float* __restrict__ tau,
                                                  const float* __restrict__ T,
                                                  const std::int32_t* __restrict__ actions,
                                                  double* term, float* __restrict__ loss) {
  const float kappa = static_cast<float>(bd.kappa);
  for (int t = threadIdx.x; t < bd.D * bd.N; t += blockDim.x) {
    const int br = t / bd.N, i = t % bd.N;
    const int a = bd.off[br] + actions[b * bd.D + br];
    const float qi = q[(static_cast<size_t>(b) * bd.N + i) * bd.A + a];
    const float ti = tau[b * bd.N + i];
    double acc = 0;
    for (int j = 0; j < bd.Np; ++j) {
      const float delta = T[(b * bd.D + br) * bd.Np + j] - qi;
      const float w = fabsf(ti - (delta < 0.f ? 1.f : 0.f));
      acc += static_cast<double>(w * huber(delta, kappa) / kappa);
    }
    term[t] = acc / bd.Np;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double per = 0;
    for (int t = 0; t < bd.D * bd.N; ++t) per += term[t];
    loss[b] = static_cast<float>(per / bd.D);
  }
}

// One block per sample (the work spread over B blocks instead of B threads).
__global__ void iqn_loss_kernel(Dims bd, const float* __restrict__ q, const float* __restrict__ tau,
                                const float* __restrict__ T,
                                const std::int32_t* __restrict__ actions,
                                float* __restrict__ loss) {
  extern __shared__ double term[];  // [D * N]
  sample_loss_block(bd, blockIdx.x, q, tau, T, actions, term, loss);
}

// iqn_greedy_targets_kernel, iqn_loss_kernel and mean_kernel over the losses in one launch, a
// block per sample: its branches' targets (a warp each), its loss, and the last block to finish
// (a fence, then an arrival count) the batch mean. The same targets, losses and mean bit for bit.
static_assert(kBranches <= kMeanThreads / 32, "iqn_tail_kernel: a warp per branch");
__global__ void __launch_bounds__(kMeanThreads)
    iqn_tail_kernel(Dims bd, const float* __restrict__ gq, const float* __restrict__ g_bias,
                    const float* __restrict__ tq, const float* __restrict__ ret,
                    const float* __restrict__ done, const float* __restrict__ q,
                    const float* __restrict__ tau, const std::int32_t* __restrict__ actions,
                    float* __restrict__ T, float* __restrict__ loss, double* __restrict__ mean,
                    unsigned* __restrict__ arrivals) {
  extern __shared__ double term[];  // [D * N]
  const int b = static_cast<int>(blockIdx.x);
  const int warp = static_cast<int>(threadIdx.x / 32);
  if (warp < bd.D)
    greedy_targets_warp(bd, b, warp, static_cast<int>(threadIdx.x % 32), gq, g_bias, tq, ret, done,
                        T);
  __syncthreads();  // the sample's targets, written by this block, are visible to all of it
  sample_loss_block(bd, b, q, tau, T, actions, term, loss);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence();  // the sample's loss is visible before its arrival is counted
    last = atomicAdd(arrivals, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  mean_block(loss, bd.B, 1.0, mean);
  if (threadIdx.x == 0) *arrivals = 0u;  // ready for the next launch
}

}  // namespace

IqnBuffers::IqnBuffers(const Dims& d)
    : cos(static_cast<size_t>(d.B) * d.N * d.C),
      phi_pre(static_cast<size_t>(d.B) * d.N * d.H),
      phi(phi_pre.size()),
      psi(phi_pre.size()),
      q(static_cast<size_t>(d.B) * d.N * d.A),
      g_cos(static_cast<size_t>(d.B) * d.K * d.C),
      g_work(static_cast<size_t>(d.B) * d.K * d.H),
      g_q(static_cast<size_t>(d.B) * d.K * d.A),
      t_cos(static_cast<size_t>(d.B) * d.Np * d.C),
      t_work(static_cast<size_t>(d.B) * d.Np * d.H),
      t_q(static_cast<size_t>(d.B) * d.Np * d.A),
      astar(static_cast<size_t>(d.B) * d.D),
      targets(static_cast<size_t>(d.B) * d.D * d.Np),
      loss(d.B) {
  NANSCOPE_CUDA_CHECK(cudaMemset(arrivals.get(), 0, sizeof(unsigned)));
}

void iqn_cos_features(const Dims& d, const float* tau, int rows, DeviceArray<float>& cos,
                      cudaStream_t s) {
  if (d.C > kCosMaxC)
    throw InternalError("iqn_cos_features: more cosine features than the kernel holds");
  cos_features<<<grid(rows, kCosRows), 128, 0, s>>>(tau, rows, d.C, cos.get());
  NANSCOPE_LAUNCH_CHECK();
}

void iqn_phi_layer(Blas& blas, const Dims& d, const ParamLayout& L, const float* p, int rows,
                   const DeviceArray<float>& cos, DeviceArray<float>& phi_pre,
                   DeviceArray<float>& phi, const SlotSink& phi_sink) {
  blas.gemm(false, false, rows, d.H, d.C, 1.f, cos.get(), p + L[kIqnPhiW].offset, 0.f,
            phi_pre.get());
  bias_relu(phi_pre.get(), p + L[kIqnPhiB].offset, rows, d.H, phi.get(), blas.stream(), phi_sink);
}

void iqn_embedding(Blas& blas, const Dims& d, const ParamLayout& L, const float* p,
                   const float* tau, int rows, DeviceArray<float>& cos, DeviceArray<float>& phi_pre,
                   DeviceArray<float>& phi, const SlotSink& phi_sink) {
  iqn_cos_features(d, tau, rows, cos, blas.stream());
  iqn_phi_layer(blas, d, L, p, rows, cos, phi_pre, phi, phi_sink);
}

namespace {
// The IQN output layer over `rows` rows of psi: q = psi W_out (+ b_out).
LayerGemm output_layer(const Dims& d, const ParamLayout& L, const float* p, int rows,
                       const float* psi, const float* bias, float* q) {
  LayerGemm g = product(false, false, rows, d.A, d.H, psi, p + L[kIqnOutW].offset, q);
  g.bias = bias;
  return g;
}
}  // namespace

void iqn_quantile_layer(Blas& blas, const Dims& d, const ParamLayout& L, const float* p,
                        const float* h2, int n, const DeviceArray<float>& phi,
                        DeviceArray<float>& psi, DeviceArray<float>& q) {
  cudaStream_t s = blas.stream();
  const int rows = d.B * n;
  if (psi.size() >= (std::size_t{1} << 31))
    throw InternalError("iqn_quantile_layer: more IQN samples than the kernel indexes");
  psi_kernel<<<grid(psi.size(), 256), 256, 0, s>>>(h2, phi.get(), static_cast<unsigned>(d.B),
                                                   static_cast<unsigned>(n),
                                                   static_cast<unsigned>(d.H), psi.get());
  NANSCOPE_LAUNCH_CHECK();
  blas.layer(output_layer(d, L, p, rows, psi.get(), p + L[kIqnOutB].offset, q.get()));
}

void iqn_pass_embedding(Blas& blas, const Dims& d, const ParamLayout& L, const float* p,
                        const float* tau, int n, DeviceArray<float>& cos,
                        DeviceArray<float>& work) {
  const int rows = d.B * n;
  if (d.C > kCosMaxC) throw InternalError("iqn_pass: more cosine features than the kernel holds");
  if (work.size() >= (std::size_t{1} << 31))
    throw InternalError("iqn_pass: more IQN samples than the kernel indexes");
  cos_features<<<grid(rows, kCosRows), 128, 0, blas.stream()>>>(tau, rows, d.C, cos.get());
  NANSCOPE_LAUNCH_CHECK();
  blas.gemm(false, false, rows, d.H, d.C, 1.f, cos.get(), p + L[kIqnPhiW].offset, 0.f, work.get());
}

void iqn_pass_quantiles(Blas& blas, const Dims& d, const ParamLayout& L, const float* p,
                        const float* h2, int n, const DeviceArray<float>& work,
                        DeviceArray<float>& q, bool add_bias) {
  const std::size_t rows = static_cast<std::size_t>(d.B) * n;
  if (d.A != kActionTotal)
    throw InternalError("iqn_pass_quantiles: the kernel is built for the trainer's sub-actions");
  if (rows >= (std::size_t{1} << 31))
    throw InternalError("iqn_pass_quantiles: more IQN samples than the kernel indexes");
  if (!rows) return;
  blas.count(GemmWork{2.0 * static_cast<double>(rows) * d.A * d.H, false, false,
                      static_cast<int>(rows), d.A, d.H});
  const auto blocks = static_cast<unsigned>((rows + kQuantileRows - 1) / kQuantileRows);
  quantile_out_kernel<<<blocks, kQuantileThreads, 0, blas.stream()>>>(
      work.get(), p + L[kIqnPhiB].offset, h2, p + L[kIqnOutW].offset,
      add_bias ? p + L[kIqnOutB].offset : nullptr, static_cast<unsigned>(rows),
      static_cast<unsigned>(n), static_cast<unsigned>(d.H), q.get());
  NANSCOPE_LAUNCH_CHECK();
}

void iqn_pass(Blas& blas, const Dims& d, const ParamLayout& L, const float* p, const float* h2,
              const float* tau, int n, DeviceArray<float>& cos, DeviceArray<float>& work,
              DeviceArray<float>& q) {
  iqn_pass_embedding(blas, d, L, p, tau, n, cos, work);
  iqn_pass_quantiles(blas, d, L, p, h2, n, work, q);
}

void iqn_greedy(const Dims& d, const float* g_q, std::int32_t* astar, cudaStream_t stream) {
  iqn_greedy_kernel<<<grid(d.B * d.D), 128, 0, stream>>>(d, g_q, astar);
  NANSCOPE_LAUNCH_CHECK();
}

void iqn_targets(const Dims& d, const float* t_q, const std::int32_t* astar, const float* ret,
                 const float* done, float* T, cudaStream_t stream) {
  iqn_targets_kernel<<<grid(static_cast<size_t>(d.B) * d.D * d.Np), 128, 0, stream>>>(d, t_q, astar,
                                                                                      ret, done, T);
  NANSCOPE_LAUNCH_CHECK();
}

void iqn_greedy_targets(const Dims& d, const float* g_q, const float* g_bias, const float* t_q,
                        const float* ret, const float* done, float* T, cudaStream_t stream) {
  const std::size_t threads = static_cast<std::size_t>(d.B) * d.D * 32;
  iqn_greedy_targets_kernel<<<grid(threads), 128, 0, stream>>>(d, g_q, g_bias, t_q, ret, done, T);
  NANSCOPE_LAUNCH_CHECK();
}

void iqn_tail(const Dims& d, IqnBuffers& iqn, const float* g_bias, const float* ret,
              const float* done, const float* tau, const std::int32_t* actions, double* mean,
              cudaStream_t stream) {
  iqn_tail_kernel<<<d.B, kMeanThreads, sizeof(double) * d.D * d.N, stream>>>(
      d, iqn.g_q.get(), g_bias, iqn.t_q.get(), ret, done, iqn.q.get(), tau, actions,
      iqn.targets.get(), iqn.loss.get(), mean, iqn.arrivals.get());
  NANSCOPE_LAUNCH_CHECK();
}

void iqn_loss(const Dims& d, const float* q, const float* tau, const float* T,
              const std::int32_t* actions, float* loss, cudaStream_t stream) {
  iqn_loss_kernel<<<d.B, 128, sizeof(double) * d.D * d.N, stream>>>(d, q, tau, T, actions, loss);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
