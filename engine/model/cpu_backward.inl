// CpuModel backward, in the spec's order: main (C51 + MSE + CQL + ensemble into the bottleneck),
// aux SAXPY, IQN trunk gradient, encoder. The head gradient buffers 27, 28, 30 and 31 hold the
// gradients of their unweighted losses; each lambda is applied once, where that gradient joins the
// shared path, and to that head's own parameter gradients.
#include <cmath>

#include "model/cpu_model.h"
#include "model/nan_ops.h"

namespace nanscope {

namespace {
// relu backward as a vectorisable select: `pre <= 0` is false for a NaN pre-activation, so the
// gradient passes there, as in PyTorch (nan_ops::relu_backward). In-place updates (the gradient is
// also the destination) keep the coefficient-wise binaryExpr, which measured faster there.
template <class P, class G>
auto relu_backward_of(const P& pre, const G& g) {
  using S = typename P::Scalar;
  return (pre.array() <= S(0)).select(S(0), g.array()).matrix();
}
}  // namespace

// From a gradient w.r.t. the aggregated logits l_{d,a,i} to the value logits (sum over every
// sub-action) and the advantage logits (g minus its mean over the branch's sub-actions).
template <class T>
void CpuModel<T>::logits_backward(In g, T* d_value, T* d_adv, bool accumulate) const {
  const int NA = d.NA;
  for (int b = 0; b < d.B; ++b) {
    for (int i = 0; i < NA; ++i) {
      double acc = 0;
      for (int a = 0; a < d.A; ++a) acc += g(b, a * NA + i);
      d_value[static_cast<std::size_t>(b) * NA + i] = static_cast<T>(acc);
    }
    for (int br = 0; br < d.D; ++br)
      for (int i = 0; i < NA; ++i) {
        double mean = 0;
        for (int a = 0; a < d.sub[br]; ++a) mean += g(b, (d.off[br] + a) * NA + i);
        mean /= d.sub[br];
        for (int a = 0; a < d.sub[br]; ++a) {
          const int col = (d.off[br] + a) * NA + i;
          T& out = d_adv[static_cast<std::size_t>(b) * d.A * NA + col];
          const T v = static_cast<T>(g(b, col) - mean);
          out = accumulate ? out + v : v;
        }
      }
  }
}

template <class T>
void CpuModel<T>::bias_grad(ParamId id, In g, T scale) {
  const auto& e = layout[id];
  Eigen::Map<RowVec<T>>(grads.data() + e.offset, static_cast<Eigen::Index>(e.count)) =
      g.colwise().sum() * scale;
}

template <class T>
void CpuModel<T>::backward_main() {
  const int NA = d.NA;
  std::fill(grads.begin(), grads.end(), T(0));
  auto q = slot_mat(kQExpected, d.B, d.A);
  auto m = slot_mat(kProjTarget, d.B, d.D * NA);
  const T coef = T(1) / static_cast<T>(d.B * d.D);
  const T lmse = static_cast<T>(config.loss.lambda_mse);

  // c51_grad with the MSE part: g = (p - m) / (B D) on the taken sub-action, plus
  // lambda_mse * dmse/dQ * dQ/dl with dQ/dl_i = p_i (zeta_i - Q).
  g_main.setZero();
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br) {
      const int a = d.off[br] + actions[static_cast<std::size_t>(b) * d.D + br];
      const T dq = lmse * T(2) * (q(b, a) - y(b, br)) * coef;
      for (int i = 0; i < NA; ++i) {
        const T p = probs(b, a * NA + i);
        g_main(b, a * NA + i) =
            (p - m(b, br * NA + i)) * coef + dq * p * (static_cast<T>(d.zeta(i)) - q(b, a));
      }
    }
  auto d_adv = slot_mat(kDAdvLogits, d.B, d.A * NA);
  logits_backward(g_main, d_value_main.data(), d_adv.data(), false);

  // CQL: dcql/dQ_{d,.} = alpha (softmax(Q_d) - onehot(a_d)) / B reaches every sub-action's logits.
  g_cql.setZero();
  const T alpha_b = static_cast<T>(config.loss.alpha_cql) / static_cast<T>(d.B);
  auto lse = slot_mat(kCqlLse, d.B, d.D);
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br) {
      const int taken = actions[static_cast<std::size_t>(b) * d.D + br];
      for (int a = 0; a < d.sub[br]; ++a) {
        const int col = d.off[br] + a;
        // softmax from the checked logsumexp (slot 11), as the CQL term itself
        const T sm = std::exp(q(b, col) - lse(b, br));
        const T dq = alpha_b * (sm - (a == taken ? T(1) : T(0)));
        for (int i = 0; i < NA; ++i)
          g_cql(b, col * NA + i) =
              dq * probs(b, col * NA + i) * (static_cast<T>(d.zeta(i)) - q(b, col));
      }
    }
  auto cql_dv = slot_mat(kCqlDValueLogits, d.B, NA);
  logits_backward(g_cql, cql_dv.data(), d_adv.data(), true);
  produced(kCqlDValueLogits);
  auto d_value = slot_mat(kDValueLogits, d.B, NA);
  d_value = d_value_main + cql_dv;
  produced(kDValueLogits);
  produced(kDAdvLogits);

  // Ensemble: d ens / d ve_{e,b,i} = (D softmax(ve)_i - sum_d m_{b,d,i}) / (E B D), unweighted.
  auto ve = slot_mat(kEnsembleLogits, d.E * d.B, NA);
  auto d_ve = slot_mat(kEnsembleDLogits, d.E * d.B, NA);
  const T ens_coef = T(1) / static_cast<T>(d.E * d.B * d.D);
  std::vector<T> qe(NA);
  for (int e = 0; e < d.E; ++e)
    for (int b = 0; b < d.B; ++b) {
      nan_ops::softmax(&ve(e * d.B + b, 0), qe.data(), NA);
      for (int i = 0; i < NA; ++i) {
        T msum = 0;
        for (int br = 0; br < d.D; ++br) msum += m(b, br * NA + i);
        d_ve(e * d.B + b, i) = (static_cast<T>(d.D) * qe[i] - msum) * ens_coef;
      }
    }
  produced(kEnsembleDLogits);

  // Branch concat: value, advantage and (times lambda_ens) ensemble heads into dz.
  const T lens = static_cast<T>(config.loss.lambda_ens);
  auto dz = slot_mat(kBnDConcat, d.B, d.Z);
  dz.noalias() = d_value * param(params, kValW).transpose();
  dz.noalias() += d_adv * param(params, kAdvW).transpose();
  auto ens_w = param(params, kEnsW);
  for (int e = 0; e < d.E; ++e)
    dz.noalias() +=
        lens * (d_ve.middleRows(e * d.B, d.B) * ens_w.middleRows(e * d.Z, d.Z).transpose());
  produced(kBnDConcat);

  // Head parameter gradients.
  auto z = slot_mat(kBnZ, d.B, d.Z);
  param(grads, kValW).noalias() = z.transpose() * d_value;
  bias_grad(kValB, d_value, T(1));
  param(grads, kAdvW).noalias() = z.transpose() * d_adv;
  bias_grad(kAdvB, d_adv, T(1));
  auto g_ens_w = param(grads, kEnsW);
  auto g_ens_b = param(grads, kEnsB);
  for (int e = 0; e < d.E; ++e) {
    g_ens_w.middleRows(e * d.Z, d.Z).noalias() =
        lens * (z.transpose() * d_ve.middleRows(e * d.B, d.B));
    g_ens_b.row(e) = d_ve.middleRows(e * d.B, d.B).colwise().sum() * lens;
  }
  param(grads, kBnW).noalias() = slot_mat(kHS2, d.B, d.H).transpose() * dz;
  bias_grad(kBnB, dz, T(1));

  bw_d_h_s2.noalias() = dz * param(params, kBnW).transpose();
  produced(kBwDHS2Main);
  check(kBwDHS2Main);
}

template <class T>
void CpuModel<T>::backward_aux() {
  auto pred = slot_mat(kAuxPredNb, d.B, d.AO);
  // d mean_b mean_k (pred - t)^2 / d pred = 2 (pred - t) / (B AO)
  d_aux_y = (pred - batch_next_bar()) * (T(2) / static_cast<T>(d.B * d.AO));
  d_aux_h.noalias() = d_aux_y * param(params, kAuxW2).transpose();
  d_aux_h = aux_pre.binaryExpr(d_aux_h, [](T pre, T g) { return nan_ops::relu_backward(pre, g); });
  auto dh = slot_mat(kAuxDHS2Nb, d.B, d.H);
  dh.noalias() = d_aux_h * param(params, kAuxW1).transpose();
  produced(kAuxDHS2Nb);

  const T laux = static_cast<T>(config.loss.lambda_aux);
  param(grads, kAuxW2).noalias() = laux * (aux_h.transpose() * d_aux_y);
  bias_grad(kAuxB2, d_aux_y, laux);
  param(grads, kAuxW1).noalias() = laux * (slot_mat(kHS2, d.B, d.H).transpose() * d_aux_h);
  bias_grad(kAuxB1, d_aux_h, laux);

  bw_d_h_s2 += laux * dh;  // the aux SAXPY
  produced(kBwDHS2Aux);
  check(kBwDHS2Aux);
}

template <class T>
void CpuModel<T>::backward_iqn() {
  if (!d.iqn) return;
  auto q = slot_mat(kIqnQuantiles, d.B * d.N, d.A);
  auto tau = slot_mat(kIqnTau, d.B, d.N);
  auto dq = slot_mat(kDBranchLogits, d.B * d.N, d.A);
  const T kappa = static_cast<T>(d.kappa);
  const T coef = T(1) / static_cast<T>(d.B * d.D * d.Np);
  dq.setZero();
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br) {
      const int a = d.off[br] + actions[static_cast<std::size_t>(b) * d.D + br];
      for (int i = 0; i < d.N; ++i) {
        const T qi = q(b * d.N + i, a);
        double acc = 0;
        for (int j = 0; j < d.Np; ++j) {
          const T delta = iqn_targets(b, br * d.Np + j) - qi;
          const T w = std::abs(tau(b, i) - (delta < T(0) ? T(1) : T(0)));
          acc -= static_cast<double>(w * nan_ops::huber_grad(delta, kappa) / kappa);
        }
        dq(b * d.N + i, a) = static_cast<T>(acc) * coef;
      }
    }
  produced(kDBranchLogits);

  auto phi = slot_mat(kIqnPhi, d.B * d.N, d.H);
  auto h2 = slot_mat(kHS2, d.B, d.H);
  iqn_dpsi.noalias() = dq * param(params, kIqnOutW).transpose();
  auto dh = slot_mat(kIqnDHS2, d.B, d.H);
  for (int b = 0; b < d.B; ++b) {
    dh.row(b).setZero();
    for (int k = 0; k < d.N; ++k) {
      const int r = b * d.N + k;
      dh.row(b) += iqn_dpsi.row(r).cwiseProduct(phi.row(r));
      iqn_dphi_pre.row(r) = iqn_dpsi.row(r).cwiseProduct(h2.row(b));
    }
  }
  produced(kIqnDHS2);
  iqn_dphi_pre = iqn_phi_pre.binaryExpr(iqn_dphi_pre,
                                        [](T pre, T g) { return nan_ops::relu_backward(pre, g); });

  const T liqn = static_cast<T>(config.loss.lambda_iqn);
  param(grads, kIqnOutW).noalias() = liqn * (iqn_psi.transpose() * dq);
  bias_grad(kIqnOutB, dq, liqn);
  param(grads, kIqnPhiW).noalias() = liqn * (iqn_cos.transpose() * iqn_dphi_pre);
  bias_grad(kIqnPhiB, iqn_dphi_pre, liqn);

  // apply_iqn_trunk_gradient: iqn_trunk_m = bw_d_h_s2 + lambda_iqn * iqn_d_h_s2, then copied back
  // over bw_d_h_s2 before the encoder consumes it.
  auto trunk_m = slot_mat(kIqnTrunkM, d.B, d.H);
  trunk_m = bw_d_h_s2 + liqn * dh;
  produced(kIqnTrunkM);
  bw_d_h_s2 = trunk_m;
  produced(kBwDHS2Iqn);
  check(kBwDHS2Iqn);
}

template <class T>
void CpuModel<T>::backward_encoder() {
  d_pre2 = relu_backward_of(pre2, bw_d_h_s2);
  param(grads, kEncW2).noalias() = slot_mat(kHS1, d.B, d.H).transpose() * d_pre2;
  bias_grad(kEncB2, d_pre2, T(1));
  d_h1.noalias() = d_pre2 * param(params, kEncW2).transpose();
  d_pre1 = relu_backward_of(pre1, d_h1);
  param(grads, kEncW1).noalias() = batch_s().transpose() * d_pre1;
  bias_grad(kEncB1, d_pre1, T(1));
}

// The fire-once-at-end checks of the backward buffers, after the whole backward has run.
template <class T>
void CpuModel<T>::checks_post_backward() {
  for (int s = kDValueLogits; s <= kBnDConcat; ++s)
    if (!slots[s].empty()) check(s);
}

}  // namespace nanscope
