// The forward's loss stages composed as CudaBackend::forward composes them (the same calls, the
// same scales: the MSE and ensemble terms through mean_into with 1/D, the CQL term through
// cql_mean), with each batch-mean scalar read back: the GPU stage tests' entry points.
#pragma once

#include <cstdint>

#include "device_array.h"
#include "forward_losses.h"

namespace nanscope::test {

struct ForwardScalars {
  double c51 = 0, mse = 0, cql = 0, iqn = 0, aux = 0, ens = 0;
};

// scale * the mean of n floats, as the backend leaves it on the device, read back.
inline double mean_of(const float* x, int n, double scale, cudaStream_t stream) {
  cuda::DeviceArray<double> out(1);
  cuda::mean_into(x, n, scale, out.get(), stream);
  return out.download()[0];
}

// Per-sample C51 loss [B], CQL logsumexp [B, D], the MSE target y [B, D] and their scalars.
inline void c51_losses(const Dims& d, bool kl, const float* logp, const float* m,
                       const std::int32_t* actions, const float* q, const float* target_logp,
                       const std::int32_t* astar, const float* ret, const float* done,
                       float alpha_cql, float* c51, float* lse, float* y, ForwardScalars& out,
                       cudaStream_t stream) {
  cuda::DeviceArray<float> mse_part(d.B);
  cuda::DeviceArray<double> cql(1);
  cuda::c51_loss(d, kl, logp, m, actions, c51, stream);
  out.c51 = mean_of(c51, d.B, 1.0, stream);
  cuda::mse_lse_terms(d, q, target_logp, astar, ret, done, actions, lse, y, mse_part.get(), stream);
  out.mse = mean_of(mse_part.get(), d.B, 1.0 / d.D, stream);
  cuda::cql_mean(d, q, lse, actions, alpha_cql, cql.get(), stream);
  out.cql = cql.download()[0];
}

// IQN greedy actions, targets and the quantile Huber loss per sample, and its mean.
inline void iqn_targets_and_loss(const Dims& d, const cuda::IqnBuffers& in, const float* tau,
                                 const std::int32_t* actions, const float* ret, const float* done,
                                 cuda::IqnBuffers& out, ForwardScalars& sc, cudaStream_t stream) {
  cuda::iqn_greedy(d, in.g_q.get(), out.astar.get(), stream);
  cuda::iqn_targets(d, in.t_q.get(), out.astar.get(), ret, done, out.targets.get(), stream);
  cuda::iqn_loss(d, in.q.get(), tau, out.targets.get(), actions, out.loss.get(), stream);
  sc.iqn = mean_of(out.loss.get(), d.B, 1.0, stream);
}

// The aux head, its loss per sample and its mean.
inline void aux_forward(cuda::Blas& blas, const Dims& d, const ParamLayout& L, const float* p,
                        const float* h2, const float* next_bar, float* pre, float* h, float* pred,
                        float* loss, ForwardScalars& sc) {
  cuda::aux_head(blas, d, L, p, h2, pre, h, pred);
  cuda::aux_loss(d, pred, next_bar, loss, blas.stream());
  sc.aux = mean_of(loss, d.B, 1.0, blas.stream());
}

// The ensemble heads, their cross-entropy to every branch's projection and its scaled mean.
inline void ensemble_forward(cuda::Blas& blas, const Dims& d, const ParamLayout& L, const float* p,
                             const float* z, const float* m, float* ve, ForwardScalars& sc) {
  cuda::ensemble_heads(blas, d, L, p, z, ve);
  cuda::DeviceArray<float> part(static_cast<std::size_t>(d.E) * d.B);
  cuda::ensemble_ce(d, ve, m, part.get(), blas.stream());
  sc.ens = mean_of(part.get(), d.E * d.B, 1.0 / d.D, blas.stream());
}

}  // namespace nanscope::test
