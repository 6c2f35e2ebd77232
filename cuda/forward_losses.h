// The rest of the forward pass on the device: C51 loss and CQL logsumexp, the MSE target, the IQN
// head (cosine embedding, quantiles, greedy action over K samples, targets, quantile Huber loss),
// the aux next-bar head, the ensemble heads and the total loss. Same maths and NaN rules as
// engine/model/cpu_forward.inl; per-sample buffers, then deterministic single-block means.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "c51_heads.h"
#include "core/config.h"

namespace nanscope::cuda {

// The forward's head and loss buffers outside the networks and the IQN head: one struct for the
// backend and the GPU tests' fixture (slot numbers in brackets).
struct HeadBuffers {
  explicit HeadBuffers(const Dims& d);
  DeviceArray<float> q, q_next;     // expected Q on s (10) and on s' (double DQN) [B, A]
  DeviceArray<std::int32_t> astar;  // double-DQN greedy sub-actions [B, D]
  DeviceArray<float> m;             // the C51 projection [B, D, atoms] (8)
  DeviceArray<float> c51;           // per-sample C51 loss [B] (9)
  DeviceArray<float> lse, y;        // CQL logsumexp [B, D] (11) and the MSE targets
  DeviceArray<float> mse_part;      // per-sample MSE [B]
  DeviceArray<float> aux_pre, aux_h, pred, aux_loss;  // the aux head; pred (17), loss (18)
  DeviceArray<float> ve, ens_part;  // ensemble logits [E, B, atoms] (19) and their CE parts
  DeviceArray<float> total;         // the total loss (20)
};

struct IqnBuffers {
  IqnBuffers(const Dims& d);
  DeviceArray<float> cos, phi_pre, phi, psi, q;  // online on s, N samples   (slots 13, 14)
  DeviceArray<float> g_cos, g_work, g_q;         // online on s', K samples (iqn_pass)
  DeviceArray<float> t_cos, t_work, t_q;         // target on s', N' samples (slot 15)
  DeviceArray<std::int32_t> astar;               // [B, D]
  DeviceArray<float> targets;                    // T [B, D*N']
  DeviceArray<float> loss;                       // [B] (slot 16)
  DeviceArray<unsigned> arrivals{1};             // iqn_tail's samples done (zero between launches)
};

// The IQN head's two layers, with phi's call site between them: the cosine embedding of `rows`
// taus, phi = relu(cos Wphi + b) (`phi_sink`: where the relu adds phi's non-finite values, slot
// iqn_phi checked by its producer, or off); the quantile layer psi = h2 * phi -> q = psi Wq + bq
// over `n` samples per row of h2.
void iqn_embedding(Blas& blas, const Dims& d, const ParamLayout& L, const float* params,
                   const float* tau, int rows, DeviceArray<float>& cos, DeviceArray<float>& phi_pre,
                   DeviceArray<float>& phi, const SlotSink& phi_sink = {});
// The embedding's two halves (the online pass checks the cosine features between them): the
// cosine features cos(pi i tau), i < C, of `rows` taus; then phi = relu(cos Wphi + b).
void iqn_cos_features(const Dims& d, const float* tau, int rows, DeviceArray<float>& cos,
                      cudaStream_t stream);
void iqn_phi_layer(Blas& blas, const Dims& d, const ParamLayout& L, const float* params, int rows,
                   const DeviceArray<float>& cos, DeviceArray<float>& phi_pre,
                   DeviceArray<float>& phi, const SlotSink& phi_sink = {});
void iqn_quantile_layer(Blas& blas, const Dims& d, const ParamLayout& L, const float* params,
                        const float* h2, int n, const DeviceArray<float>& phi,
                        DeviceArray<float>& psi, DeviceArray<float>& q);
// Both layers at once (the target and greedy passes, which have no call site between them and
// no backward): the IQN head for `n` samples per row of h2, cos -> phi = relu(cos Wphi + b) ->
// psi = h2 * phi -> q = psi Wq + bq, with phi's bias, relu, psi and the output layer in one kernel
// after the cosine GEMM (left in `work` [B*n, H]): neither phi nor psi is stored (at batch 4,096
// and hidden 2,048 a 1 GB buffer each). psi is made as the two layers apart make it, bit for bit,
// and q sums it in order with a rounded multiply and an add per term, the CPU backend's product
// (tests/gpu/forward_gpu_test.cpp).
void iqn_pass(Blas& blas, const Dims& d, const ParamLayout& L, const float* params, const float* h2,
              const float* tau, int n, DeviceArray<float>& cos, DeviceArray<float>& work,
              DeviceArray<float>& q);
// The pass in its two parts: what reads tau and the parameters alone (the cosine features and
// the cosine GEMM into `work`), which the step runs from its start beside the networks, and what
// needs h2 (phi's bias and relu, psi, the output layer and its bias into q, in one launch). Without
// `add_bias`, q is left without the output bias (the greedy pass, whose bias iqn_greedy_targets
// adds).
void iqn_pass_embedding(Blas& blas, const Dims& d, const ParamLayout& L, const float* params,
                        const float* tau, int n, DeviceArray<float>& cos, DeviceArray<float>& work);
void iqn_pass_quantiles(Blas& blas, const Dims& d, const ParamLayout& L, const float* params,
                        const float* h2, int n, const DeviceArray<float>& work,
                        DeviceArray<float>& q, bool add_bias = true);

// *out = scale * mean(x[0..n)) in a fixed order, left on the device.
void mean_into(const float* x, int n, double scale, double* out, cudaStream_t stream);

// The forward's stages one by one, for a backend that runs each slot's call site between them.
// Each only enqueues work on `stream` (or the Blas's stream).
void c51_loss(const Dims& d, bool kl_unmasked, const float* logp, const float* m,
              const std::int32_t* actions, float* c51_per_sample, cudaStream_t stream);
// CQL logsumexp [B, D] (slot 11), the MSE target y [B, D] and the per-sample MSE sums, from Q.
void mse_lse_terms(const Dims& d, const float* q, const float* target_logp,
                   const std::int32_t* astar, const float* ret, const float* done,
                   const std::int32_t* actions, float* cql_lse, float* y, float* mse_part,
                   cudaStream_t stream);
// The CQL term alpha / B * sum (lse - Q of the taken sub-action) from the logsumexp buffer, after
// its call site; left on the device.
void cql_mean(const Dims& d, const float* q, const float* cql_lse, const std::int32_t* actions,
              double alpha_cql, double* out, cudaStream_t stream);
void iqn_greedy(const Dims& d, const float* g_q, std::int32_t* astar, cudaStream_t stream);
void iqn_targets(const Dims& d, const float* t_q, const std::int32_t* astar, const float* ret,
                 const float* done, float* targets, cudaStream_t stream);
// Both in one launch (the step's): the same greedy actions (not stored) and targets bit for bit.
// `g_bias`: the output bias to add to g_q's values (null: g_q has it).
void iqn_greedy_targets(const Dims& d, const float* g_q, const float* g_bias, const float* t_q,
                        const float* ret, const float* done, float* T, cudaStream_t stream);
void iqn_loss(const Dims& d, const float* q, const float* tau, const float* targets,
              const std::int32_t* actions, float* loss, cudaStream_t stream);
// iqn_greedy_targets (iqn.g_q, iqn.t_q -> iqn.targets), iqn_loss (iqn.q -> iqn.loss) and
// mean_into(iqn.loss, B, 1, mean) in one launch (the captured step, which has no call site
// between them): the same targets, losses and mean bit for bit.
void iqn_tail(const Dims& d, IqnBuffers& iqn, const float* g_bias, const float* ret,
              const float* done, const float* tau, const std::int32_t* actions, double* mean,
              cudaStream_t stream);
void aux_head(Blas& blas, const Dims& d, const ParamLayout& L, const float* params, const float* h2,
              float* pre, float* h, float* pred);
void aux_loss(const Dims& d, const float* pred, const float* next_bar, float* loss,
              cudaStream_t stream);
void ensemble_heads(Blas& blas, const Dims& d, const ParamLayout& L, const float* params,
                    const float* z, float* ve);
// Per (head, sample) cross-entropy of the ensemble logits to every branch's projection [E*B].
void ensemble_ce(const Dims& d, const float* ve, const float* m, float* part, cudaStream_t stream);

}  // namespace nanscope::cuda
