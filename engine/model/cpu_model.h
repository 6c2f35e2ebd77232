// The CPU reference trainer: the whole network of docs/trainer.md over Eigen, templated on the
// storage type (float like the GPU, double for the finite-difference tests). Buffers are public
// so tests can perturb an intermediate and re-run the stages after it; the stages are the
// building blocks of the phases (cpu_backend.cpp) and carry the slot call sites.
#pragma once

#include <Eigen/Dense>
#include <array>
#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/slot_table.h"
#include "data/transitions.h"
#include "model/backend.h"
#include "model/cpu_check_bank.h"
#include "model/dims.h"
#include "model/param_layout.h"

namespace nanscope {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using RowVec = Eigen::Matrix<T, 1, Eigen::Dynamic>;
template <class T>
using MatMap = Eigen::Map<Mat<T>>;
template <class T>
using CMatMap = Eigen::Map<const Mat<T>>;
template <class T>
using CRowMap = Eigen::Map<const RowVec<T>>;

template <class T>
class CpuModel {
 public:
  explicit CpuModel(const Config& config);

  // ---- Phases (spec order) ----
  void sample(const StepKey& key);
  void forward();
  void backward_main();
  void backward_aux();
  void backward_iqn();
  void backward_encoder();
  void checks_post_backward();
  void optimizer(const StepKey& key);

  // ---- Forward stages (forward() runs them in this order) ----
  void stage_trunk();        // slots 1, 2
  void stage_bottleneck();   // slot 3
  void stage_value_adv();    // slots 4, 5
  void stage_aggregate();    // slot 6
  void stage_c51_targets();  // a*, slots 7, 8, y (no gradient)
  void stage_c51_losses();   // slots 9, 10, 11, mse, cql
  void stage_iqn_online();   // slots 12 (check), 13, 14
  void stage_iqn_targets();  // a*_iqn, slot 15, T (no gradient)
  void stage_iqn_loss();     // slot 16
  void stage_aux();          // slots 17, 18
  void stage_ensemble();     // slot 19, ens
  void stage_total();        // slot 20
  // Recomputes every loss from the current online buffers with the targets (a*, m, y, T, every
  // tau) frozen: what the finite-difference tests differentiate.
  void forward_frozen_targets();

  void reset_parameters();
  BatchContext batch_context() const;
  void set_batch(const BatchContext& batch);  // throws DataError on a missing or misshapen field
  void load_fold(const TransitionSet& t);
  void sync_target() { target = params; }

  // ---- Views ----
  SlotView slot_view(int index);
  MatMap<T> param(std::vector<T>& flat, ParamId id);
  CMatMap<T> param(const std::vector<T>& flat, ParamId id) const;
  CRowMap<T> bias(const std::vector<T>& flat, ParamId id) const;
  MatMap<T> slot_mat(int index, int rows, int cols);
  // The work buffer that is a slot's (SlotStorage::Work); throws InternalError for one it does
  // not name.
  Mat<T>& work_slot_buffer(int index);
  // Fields of the batch slot.
  MatMap<T> batch_s();
  MatMap<T> batch_s_next();
  MatMap<T> batch_ret();
  MatMap<T> batch_done();
  MatMap<T> batch_next_bar();

  Config config;
  Dims d;
  ParamLayout layout;
  CpuCallSites* sites = nullptr;  // the backend's bank (cpu_check_bank.h)

  // Parameters, gradients and Adam state share the layout; adam = [m | v].
  std::vector<T> params, target, grads, adam;
  std::int64_t adam_t = 0;

  // One buffer per slot of its own (empty when absent); the others are views (slot_view).
  std::array<std::vector<T>, kBuiltinSlotCount> slots;
  std::array<std::vector<std::int64_t>, kBuiltinSlotCount> shapes;

  // The sampling pool of the current fold, converted to T once.
  struct Pool {
    int count = 0;
    std::vector<T> state, next_state, ret, done, next_bar;
    std::vector<std::int32_t> action;
  } pool;

  // Per-step draws and integers.
  std::vector<std::int32_t> actions;    // [B, D] taken sub-actions
  std::vector<std::int32_t> astar;      // [B, D] C51 greedy sub-action on s' (-1: NaN row)
  std::vector<std::int32_t> astar_iqn;  // [B, D] IQN greedy sub-action on s'
  Mat<T> tau_target, tau_greedy;        // [B, N'], [B, K]

  // Forward intermediates (online on s).
  Mat<T> pre1, pre2, probs;  // [B,H], [B,H], [B, A*NA]
  Mat<T> y;                  // [B, D] MSE targets
  // Online and target passes on s'.
  Mat<T> n_pre1, n_h1, n_pre2, n_h2, n_z, n_v, n_adv, n_logp;
  Mat<T> t_pre1, t_h1, t_pre2, t_h2, t_z, t_v, t_adv;
  // IQN.
  Mat<T> iqn_cos, iqn_phi_pre, iqn_psi;                            // [B*N, C], [B*N, H], [B*N, H]
  Mat<T> iqn_t_cos, iqn_t_phi_pre, iqn_t_phi, iqn_t_psi;           // target on s'
  Mat<T> iqn_g_cos, iqn_g_phi_pre, iqn_g_phi, iqn_g_psi, iqn_g_q;  // online greedy on s'
  Mat<T> iqn_dpsi, iqn_dphi_pre;                                   // backward work, [B*N, H]
  Mat<T> iqn_targets;                                              // [B, D*N'] T
  // Aux.
  Mat<T> aux_pre, aux_h;  // [B, AH]
  // Backward work buffers.
  Mat<T> g_main, g_cql;  // [B, A*NA]
  Mat<T> d_value_main;   // [B, NA]
  Mat<T> bw_d_h_s2;      // [B, H] the trunk-output gradient
  Mat<T> d_pre2, d_h1, d_pre1, d_aux_y, d_aux_h;

  StepLosses losses;

 private:
  void check(int slot) {
    if (sites) sites->check(slot);
  }
  void produced(int slot) {
    if (sites) sites->produced(slot);
  }
  using In = Eigen::Ref<const Mat<T>>;
  using Out = Eigen::Ref<Mat<T>>;
  void trunk_pass(const std::vector<T>& net, In x, Out pre1, Out h1, Out pre2, Out h2) const;
  void heads_pass(const std::vector<T>& net, In h2, Out z, Out v, Out adv) const;
  void aggregate_pass(In v, In adv, T* logp) const;
  // The IQN head in its two layers: the cosine embedding phi of the taus, then the quantiles
  // q = (h2 * phi) Wq + bq. Two calls, so that phi's call site lies between its producer and
  // the quantile layer that consumes it.
  void iqn_embedding(const std::vector<T>& net, const T* tau, int rows, Out cos, Out phi_pre,
                     Out phi) const;
  // The embedding's two halves (the online pass checks the cosine features between them).
  void iqn_cos_features(const T* tau, int rows, Out cos) const;
  void iqn_phi_layer(const std::vector<T>& net, In cos, Out phi_pre, Out phi) const;
  void iqn_quantile_layer(const std::vector<T>& net, In h2, In phi, int n, Out psi, Out q) const;
  void iqn_pass(const std::vector<T>& net, In h2, const T* tau, int n, Out cos, Out phi_pre,
                Out phi, Out psi, Out q) const;
  void logits_backward(In g, T* d_value, T* d_adv, bool accumulate) const;
  void bias_grad(ParamId id, In g, T scale);
};

extern template class CpuModel<float>;
extern template class CpuModel<double>;

}  // namespace nanscope
