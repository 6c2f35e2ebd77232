// CpuModel forward stages: the online network on s, the online and target passes on s' that make
// the (gradient-free) targets, the heads and the loss terms. Slot numbers in brackets.
#include <cmath>

#include "model/cpu_model.h"
#include "model/nan_ops.h"

namespace nanscope {

namespace {
// relu as a vectorisable Eigen select: `x < 0` is false for NaN, so NaN passes (nan_ops::relu).
template <class X>
auto relu_of(const X& x) {
  using S = typename X::Scalar;
  return (x.array() < S(0)).select(S(0), x.array()).matrix();
}
}  // namespace

template <class T>
void CpuModel<T>::trunk_pass(const std::vector<T>& net, In x, Out p1, Out h1, Out p2,
                             Out h2) const {
  p1.noalias() = x * param(net, kEncW1);
  p1.rowwise() += bias(net, kEncB1);
  h1 = relu_of(p1);
  p2.noalias() = h1 * param(net, kEncW2);
  p2.rowwise() += bias(net, kEncB2);
  h2 = relu_of(p2);
}

template <class T>
void CpuModel<T>::heads_pass(const std::vector<T>& net, In h2, Out z, Out v, Out adv) const {
  z.noalias() = h2 * param(net, kBnW);
  z.rowwise() += bias(net, kBnB);
  v.noalias() = z * param(net, kValW);
  v.rowwise() += bias(net, kValB);
  adv.noalias() = z * param(net, kAdvW);
  adv.rowwise() += bias(net, kAdvB);
}

// Branching dueling aggregation l = v + a - mean_a' a per branch, then log_softmax over atoms.
template <class T>
void CpuModel<T>::aggregate_pass(In v, In adv, T* logp) const {
  const int NA = d.NA;
  std::vector<T> row(NA), mean(NA);
  for (int b = 0; b < d.B; ++b) {
    for (int br = 0; br < d.D; ++br) {
      for (int i = 0; i < NA; ++i) {
        double acc = 0;
        for (int a = 0; a < d.sub[br]; ++a) acc += adv(b, (d.off[br] + a) * NA + i);
        mean[i] = static_cast<T>(acc / d.sub[br]);
      }
      for (int a = 0; a < d.sub[br]; ++a) {
        const int col = (d.off[br] + a) * NA;
        for (int i = 0; i < NA; ++i) row[i] = v(b, i) + adv(b, col + i) - mean[i];
        nan_ops::log_softmax(row.data(), logp + static_cast<std::size_t>(b) * d.A * NA + col, NA);
      }
    }
  }
}

// The IQN cosine features cos(pi i tau), i < C, of `rows` taus.
template <class T>
void CpuModel<T>::iqn_cos_features(const T* tau, int rows, Out cos) const {
  // cos(pi i tau) for i = 0..C-1 by the Chebyshev recurrence cos(ix) = 2 cos(x) cos((i-1)x) -
  // cos((i-2)x), in double (error ~ i * 1e-16, far below float rounding): one cos per row, not C.
  const double pi = 3.14159265358979323846;
  for (int r = 0; r < rows; ++r) {
    const double c1 = std::cos(pi * static_cast<double>(tau[r]));
    double prev = 1.0, cur = c1;
    cos(r, 0) = T(1);
    if (d.C > 1) cos(r, 1) = static_cast<T>(c1);
    for (int i = 2; i < d.C; ++i) {
      const double next = 2.0 * c1 * cur - prev;
      prev = cur;
      cur = next;
      cos(r, i) = static_cast<T>(cur);
    }
  }
}

// The embedding layer phi = relu(cos Wphi + bphi) of the cosine features.
template <class T>
void CpuModel<T>::iqn_phi_layer(const std::vector<T>& net, In cos, Out phi_pre, Out phi) const {
  phi_pre.noalias() = cos * param(net, kIqnPhiW);
  phi_pre.rowwise() += bias(net, kIqnPhiB);
  phi = relu_of(phi_pre);
}

// The IQN cosine embedding phi = relu(cos(pi i tau) Wphi + bphi) of `rows` taus.
template <class T>
void CpuModel<T>::iqn_embedding(const std::vector<T>& net, const T* tau, int rows, Out cos,
                                Out phi_pre, Out phi) const {
  iqn_cos_features(tau, rows, cos);
  iqn_phi_layer(net, cos, phi_pre, phi);
}

// The quantile layer over n samples per row of h2: psi = h2 * phi (broadcast over the samples),
// q = psi Wq + bq.
template <class T>
void CpuModel<T>::iqn_quantile_layer(const std::vector<T>& net, In h2, In phi, int n, Out psi,
                                     Out q) const {
  for (int b = 0; b < d.B; ++b)
    for (int k = 0; k < n; ++k) psi.row(b * n + k) = h2.row(b).cwiseProduct(phi.row(b * n + k));
  q.noalias() = psi * param(net, kIqnOutW);
  q.rowwise() += bias(net, kIqnOutB);
}

template <class T>
void CpuModel<T>::iqn_pass(const std::vector<T>& net, In h2, const T* tau, int n, Out cos,
                           Out phi_pre, Out phi, Out psi, Out q) const {
  iqn_embedding(net, tau, d.B * n, cos, phi_pre, phi);
  iqn_quantile_layer(net, h2, phi, n, psi, q);
}

template <class T>
void CpuModel<T>::forward() {
  stage_trunk();
  stage_bottleneck();
  stage_value_adv();
  stage_aggregate();
  stage_c51_targets();
  stage_c51_losses();
  stage_iqn_online();
  stage_iqn_targets();
  stage_iqn_loss();
  stage_aux();
  stage_ensemble();
  stage_total();
}

template <class T>
void CpuModel<T>::forward_frozen_targets() {
  CpuCallSites* saved = sites;
  sites = nullptr;
  stage_trunk();
  stage_bottleneck();
  stage_value_adv();
  stage_aggregate();
  stage_c51_losses();
  stage_iqn_online();
  stage_iqn_loss();
  stage_aux();
  stage_ensemble();
  stage_total();
  sites = saved;
}

template <class T>
void CpuModel<T>::stage_trunk() {
  auto h1 = slot_mat(kHS1, d.B, d.H);
  auto h2 = slot_mat(kHS2, d.B, d.H);
  // The trunk pass writes h_s1 and h_s2 in one go; announce them in order so an injection into
  // h_s1 is seen by layer 2.
  pre1.noalias() = batch_s() * param(params, kEncW1);
  pre1.rowwise() += bias(params, kEncB1);
  h1 = relu_of(pre1);
  produced(kHS1);
  check(kHS1);
  pre2.noalias() = h1 * param(params, kEncW2);
  pre2.rowwise() += bias(params, kEncB2);
  h2 = relu_of(pre2);
  produced(kHS2);
  check(kHS2);
}

template <class T>
void CpuModel<T>::stage_bottleneck() {
  auto z = slot_mat(kBnZ, d.B, d.Z);
  z.noalias() = slot_mat(kHS2, d.B, d.H) * param(params, kBnW);
  z.rowwise() += bias(params, kBnB);
  produced(kBnZ);
  check(kBnZ);
}

template <class T>
void CpuModel<T>::stage_value_adv() {
  auto z = slot_mat(kBnZ, d.B, d.Z);
  auto v = slot_mat(kValueLogits, d.B, d.NA);
  v.noalias() = z * param(params, kValW);
  v.rowwise() += bias(params, kValB);
  produced(kValueLogits);
  check(kValueLogits);
  auto adv = slot_mat(kAdvLogits, d.B, d.A * d.NA);
  adv.noalias() = z * param(params, kAdvW);
  adv.rowwise() += bias(params, kAdvB);
  produced(kAdvLogits);
  check(kAdvLogits);
}

template <class T>
void CpuModel<T>::stage_aggregate() {
  aggregate_pass(slot_mat(kValueLogits, d.B, d.NA), slot_mat(kAdvLogits, d.B, d.A * d.NA),
                 slots[kLogProbs].data());
  produced(kLogProbs);
  check(kLogProbs);
  probs = slot_mat(kLogProbs, d.B, d.A * d.NA).array().exp();
}

// Targets (no gradient): the greedy sub-action per branch under the online network on s' (double
// DQN), the target network's distribution of it, its C51 projection m and the MSE target y.
template <class T>
void CpuModel<T>::stage_c51_targets() {
  const int NA = d.NA;
  auto sn = batch_s_next();
  trunk_pass(params, sn, n_pre1, n_h1, n_pre2, n_h2);
  heads_pass(params, n_h2, n_z, n_v, n_adv);
  aggregate_pass(n_v, n_adv, n_logp.data());
  std::vector<T> q(d.A);
  for (int b = 0; b < d.B; ++b) {
    for (int a = 0; a < d.A; ++a) {
      double acc = 0;
      for (int i = 0; i < NA; ++i) acc += d.zeta(i) * std::exp(n_logp(b, a * NA + i));
      q[a] = static_cast<T>(acc);
    }
    for (int br = 0; br < d.D; ++br)
      astar[static_cast<std::size_t>(b) * d.D + br] =
          nan_ops::argmax_or_nan(q.data() + d.off[br], d.sub[br]);
  }

  trunk_pass(target, sn, t_pre1, t_h1, t_pre2, t_h2);
  heads_pass(target, t_h2, t_z, t_v, t_adv);
  aggregate_pass(t_v, t_adv, slots[kTargetLogProbs].data());
  produced(kTargetLogProbs);
  check(kTargetLogProbs);

  // m_i = sum_j clip(1 - |Tz_j - zeta_i| / dz, 0, 1) p'_j with Tz_j = clip(R + g^n (1-done)
  // zeta_j).
  auto tlp = slot_mat(kTargetLogProbs, d.B, d.A * NA);
  auto m = slot_mat(kProjTarget, d.B, d.D * NA);
  auto r = batch_ret();
  auto done = batch_done();
  const T vmin = static_cast<T>(d.v_min), vmax = static_cast<T>(d.v_max);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> tz(NA), pj(NA);
  for (int b = 0; b < d.B; ++b) {
    const T disc = static_cast<T>(d.gamma_n) * (T(1) - done(b, 0));
    for (int br = 0; br < d.D; ++br) {
      const int a = astar[static_cast<std::size_t>(b) * d.D + br];
      if (a < 0) {  // NaN in the greedy row: the target is NaN, not a silent pick
        for (int i = 0; i < NA; ++i) m(b, br * NA + i) = nan;
        y(b, br) = nan;
        continue;
      }
      const int col = (d.off[br] + a) * NA;
      double ey = 0;
      for (int j = 0; j < NA; ++j) {
        pj[j] = std::exp(tlp(b, col + j));
        tz[j] = nan_ops::clamp(r(b, 0) + disc * static_cast<T>(d.zeta(j)), vmin, vmax);
        ey += d.zeta(j) * static_cast<double>(pj[j]);
      }
      y(b, br) = r(b, 0) + disc * static_cast<T>(ey);
      for (int i = 0; i < NA; ++i) {
        double acc = 0;
        const double zi = d.zeta(i);
        for (int j = 0; j < NA; ++j) {
          const double w = 1.0 - std::abs(static_cast<double>(tz[j]) - zi) / d.dz;
          acc += nan_ops::clamp(w, 0.0, 1.0) * static_cast<double>(pj[j]);
        }
        m(b, br * NA + i) = static_cast<T>(acc);
      }
    }
  }
  produced(kProjTarget);
  check(kProjTarget);
}

template <class T>
void CpuModel<T>::stage_c51_losses() {
  const int NA = d.NA;
  auto logp = slot_mat(kLogProbs, d.B, d.A * NA);
  auto m = slot_mat(kProjTarget, d.B, d.D * NA);
  auto c51 = slot_mat(kC51Loss, d.B, 1);
  const bool kl_unmasked = config.loss.c51_form == C51Form::KlUnmasked;
  double c51_sum = 0;
  for (int b = 0; b < d.B; ++b) {
    double per = 0;
    for (int br = 0; br < d.D; ++br) {
      const int col = (d.off[br] + actions[static_cast<std::size_t>(b) * d.D + br]) * NA;
      if (kl_unmasked)  // sum m (log m - log p): 0 * log 0 = 0 * -Inf = NaN wherever m_i = 0
        for (int i = 0; i < NA; ++i) {
          const T mi = m(b, br * NA + i);
          per += static_cast<double>(mi * (std::log(mi) - logp(b, col + i)));
        }
      else
        for (int i = 0; i < NA; ++i)
          per -= static_cast<double>(m(b, br * NA + i)) * logp(b, col + i);
    }
    c51(b, 0) = static_cast<T>(per / d.D);
  }
  produced(kC51Loss);
  for (int b = 0; b < d.B; ++b) c51_sum += c51(b, 0);
  losses.c51 = c51_sum / d.B;
  check(kC51Loss);

  auto q = slot_mat(kQExpected, d.B, d.A);
  for (int b = 0; b < d.B; ++b)
    for (int a = 0; a < d.A; ++a) {
      double acc = 0;
      for (int i = 0; i < NA; ++i) acc += d.zeta(i) * static_cast<double>(probs(b, a * NA + i));
      q(b, a) = static_cast<T>(acc);
    }
  produced(kQExpected);
  check(kQExpected);

  // MSE, then the logsumexp per branch; the CQL term is computed from the checked logsumexp, as
  // its gradient is (backward_main), so what the check saw is what the losses use.
  auto lse = slot_mat(kCqlLse, d.B, d.D);
  double mse = 0, cql = 0;
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br) {
      lse(b, br) = nan_ops::logsumexp(&q(b, d.off[br]), d.sub[br]);
      const T taken = q(b, d.off[br] + actions[static_cast<std::size_t>(b) * d.D + br]);
      const double e = static_cast<double>(taken) - y(b, br);
      mse += e * e;
    }
  produced(kCqlLse);
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br)
      cql += static_cast<double>(lse(b, br)) -
             q(b, d.off[br] + actions[static_cast<std::size_t>(b) * d.D + br]);
  check(kCqlLse);
  losses.mse = mse / (d.B * d.D);
  losses.cql = config.loss.alpha_cql * cql / d.B;
}

template <class T>
void CpuModel<T>::stage_iqn_online() {
  if (!d.iqn) return;
  check(kIqnTau);
  auto q = slot_mat(kIqnQuantiles, d.B * d.N, d.A);
  auto phi = slot_mat(kIqnPhi, d.B * d.N, d.H);
  iqn_cos_features(slots[kIqnTau].data(), d.B * d.N, iqn_cos);
  produced(kIqnCosFeatures);
  check(kIqnCosFeatures);
  iqn_phi_layer(params, iqn_cos, iqn_phi_pre, phi);
  produced(kIqnPhi);
  check(kIqnPhi);
  iqn_quantile_layer(params, slot_mat(kHS2, d.B, d.H), phi, d.N, iqn_psi, q);
  produced(kIqnQuantiles);
  check(kIqnQuantiles);
}

// IQN targets (no gradient): the greedy sub-action of the online IQN's mean over K samples on s',
// and T_j = R + g^n (1-done) q'_j(s', a*) from the target IQN with N' samples.
template <class T>
void CpuModel<T>::stage_iqn_targets() {
  if (!d.iqn) return;
  iqn_pass(params, n_h2, tau_greedy.data(), d.K, iqn_g_cos, iqn_g_phi_pre, iqn_g_phi, iqn_g_psi,
           iqn_g_q);
  std::vector<T> mean(d.A);
  for (int b = 0; b < d.B; ++b) {
    for (int a = 0; a < d.A; ++a) {
      double acc = 0;
      for (int k = 0; k < d.K; ++k) acc += iqn_g_q(b * d.K + k, a);
      mean[a] = static_cast<T>(acc / d.K);
    }
    for (int br = 0; br < d.D; ++br)
      astar_iqn[static_cast<std::size_t>(b) * d.D + br] =
          nan_ops::argmax_or_nan(mean.data() + d.off[br], d.sub[br]);
  }
  auto qt = slot_mat(kIqnTargetQuantiles, d.B * d.Np, d.A);
  iqn_pass(target, t_h2, tau_target.data(), d.Np, iqn_t_cos, iqn_t_phi_pre, iqn_t_phi, iqn_t_psi,
           qt);
  produced(kIqnTargetQuantiles);
  check(kIqnTargetQuantiles);
  auto r = batch_ret();
  auto done = batch_done();
  for (int b = 0; b < d.B; ++b) {
    const T disc = static_cast<T>(d.gamma_n) * (T(1) - done(b, 0));
    for (int br = 0; br < d.D; ++br) {
      const int a = astar_iqn[static_cast<std::size_t>(b) * d.D + br];
      for (int j = 0; j < d.Np; ++j)
        iqn_targets(b, br * d.Np + j) = a < 0 ? std::numeric_limits<T>::quiet_NaN()
                                              : r(b, 0) + disc * qt(b * d.Np + j, d.off[br] + a);
    }
  }
}

// Quantile Huber loss: per sample, the sum over i of the mean over j, then the mean over branches.
template <class T>
void CpuModel<T>::stage_iqn_loss() {
  if (!d.iqn) return;
  auto q = slot_mat(kIqnQuantiles, d.B * d.N, d.A);
  auto tau = slot_mat(kIqnTau, d.B, d.N);
  auto loss = slot_mat(kIqnLoss, d.B, 1);
  const T kappa = static_cast<T>(d.kappa);
  double total = 0;
  for (int b = 0; b < d.B; ++b) {
    double per = 0;
    for (int br = 0; br < d.D; ++br) {
      const int a = d.off[br] + actions[static_cast<std::size_t>(b) * d.D + br];
      for (int i = 0; i < d.N; ++i) {
        const T qi = q(b * d.N + i, a);
        double acc = 0;
        for (int j = 0; j < d.Np; ++j) {
          const T delta = iqn_targets(b, br * d.Np + j) - qi;
          const T w = std::abs(tau(b, i) - (delta < T(0) ? T(1) : T(0)));
          acc += static_cast<double>(w * nan_ops::huber(delta, kappa) / kappa);
        }
        per += acc / d.Np;
      }
    }
    loss(b, 0) = static_cast<T>(per / d.D);
  }
  produced(kIqnLoss);
  for (int b = 0; b < d.B; ++b) total += loss(b, 0);
  losses.iqn = total / d.B;
  check(kIqnLoss);
}

template <class T>
void CpuModel<T>::stage_aux() {
  auto h2 = slot_mat(kHS2, d.B, d.H);
  aux_pre.noalias() = h2 * param(params, kAuxW1);
  aux_pre.rowwise() += bias(params, kAuxB1);
  aux_h = relu_of(aux_pre);
  auto pred = slot_mat(kAuxPredNb, d.B, d.AO);
  pred.noalias() = aux_h * param(params, kAuxW2);
  pred.rowwise() += bias(params, kAuxB2);
  produced(kAuxPredNb);
  check(kAuxPredNb);
  auto target_nb = batch_next_bar();
  auto loss = slot_mat(kAuxLoss, d.B, 1);
  double total = 0;
  for (int b = 0; b < d.B; ++b) {
    double acc = 0;
    for (int k = 0; k < d.AO; ++k) {
      const double e = static_cast<double>(pred(b, k)) - target_nb(b, k);
      acc += e * e;
    }
    loss(b, 0) = static_cast<T>(acc / d.AO);
  }
  produced(kAuxLoss);
  for (int b = 0; b < d.B; ++b) total += loss(b, 0);
  losses.aux = total / d.B;
  check(kAuxLoss);
}

// Each ensemble head learns the projected target distribution of every branch.
template <class T>
void CpuModel<T>::stage_ensemble() {
  const int NA = d.NA;
  auto z = slot_mat(kBnZ, d.B, d.Z);
  auto ve = slot_mat(kEnsembleLogits, d.E * d.B, NA);
  auto w = param(params, kEnsW);
  auto bias_all = param(params, kEnsB);
  for (int e = 0; e < d.E; ++e) {
    ve.middleRows(e * d.B, d.B).noalias() = z * w.middleRows(e * d.Z, d.Z);
    ve.middleRows(e * d.B, d.B).rowwise() += bias_all.row(e);
  }
  produced(kEnsembleLogits);
  check(kEnsembleLogits);
  auto m = slot_mat(kProjTarget, d.B, d.D * NA);
  std::vector<T> lsm(NA);
  double total = 0;
  for (int e = 0; e < d.E; ++e)
    for (int b = 0; b < d.B; ++b) {
      nan_ops::log_softmax(&ve(e * d.B + b, 0), lsm.data(), NA);
      for (int br = 0; br < d.D; ++br)
        for (int i = 0; i < NA; ++i) total -= static_cast<double>(m(b, br * NA + i)) * lsm[i];
    }
  losses.ens = total / (static_cast<double>(d.E) * d.B * d.D);
}

template <class T>
void CpuModel<T>::stage_total() {
  const auto& l = config.loss;
  double total = losses.c51 + l.lambda_mse * losses.mse + losses.cql + l.lambda_aux * losses.aux +
                 l.lambda_ens * losses.ens;
  if (d.iqn) total += l.lambda_iqn * losses.iqn;
  slots[kTotalLoss][0] = static_cast<T>(total);
  produced(kTotalLoss);
  losses.total = static_cast<double>(slots[kTotalLoss][0]);  // the buffer is the loss
  check(kTotalLoss);
}

}  // namespace nanscope
