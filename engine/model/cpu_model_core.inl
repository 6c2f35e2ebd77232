// CpuModel: construction, buffers, views, parameter initialisation and the sample phase.
// Included by cpu_model_f32.cpp and cpu_model_f64.cpp, which instantiate it.
#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "data/philox.h"
#include "model/cpu_model.h"

namespace nanscope {

template <class T>
CpuModel<T>::CpuModel(const Config& c) : config(c), d(Dims::from(c)), layout(d) {
  const int B = d.B, H = d.H, NA = d.NA, A = d.A;
  params.assign(layout.total(), T(0));
  target = grads = params;
  adam.assign(2 * layout.total(), T(0));

  alloc_slot(kBatch, {static_cast<std::int64_t>(B) * (2 * d.F + 2 + d.AO)});
  alloc_slot(kHS1, {B, H});
  alloc_slot(kHS2, {B, H});
  alloc_slot(kBnZ, {B, d.Z});
  alloc_slot(kValueLogits, {B, NA});
  alloc_slot(kAdvLogits, {B, A, NA});
  alloc_slot(kLogProbs, {B, A, NA});
  alloc_slot(kTargetLogProbs, {B, A, NA});
  alloc_slot(kProjTarget, {B, d.D, NA});
  alloc_slot(kC51Loss, {B});
  alloc_slot(kQExpected, {B, A});
  alloc_slot(kCqlLse, {B, d.D});
  alloc_slot(kAuxPredNb, {B, d.AO});
  alloc_slot(kAuxLoss, {B});
  alloc_slot(kEnsembleLogits, {d.E, B, NA});
  alloc_slot(kTotalLoss, {1});
  alloc_slot(kGradNorm, {1 + kGroupCount});
  shapes[kAdamMoments] = {2, static_cast<std::int64_t>(layout.total())};
  shapes[kParams] = {static_cast<std::int64_t>(layout.total())};
  alloc_slot(kDValueLogits, {B, NA});
  alloc_slot(kDAdvLogits, {B, A, NA});
  alloc_slot(kCqlDValueLogits, {B, NA});
  alloc_slot(kAuxDHS2Nb, {B, H});
  alloc_slot(kEnsembleDLogits, {d.E, B, NA});
  alloc_slot(kBnDConcat, {B, d.Z});
  for (int s : {kBwDHS2Main, kBwDHS2Aux, kBwDHS2Iqn}) shapes[s] = {B, H};
  if (d.iqn) {
    alloc_slot(kIqnTau, {B, d.N});
    alloc_slot(kIqnPhi, {B, d.N, H});
    alloc_slot(kIqnQuantiles, {B, d.N, A});
    alloc_slot(kIqnTargetQuantiles, {B, d.Np, A});
    alloc_slot(kIqnLoss, {B});
    alloc_slot(kIqnTrunkM, {B, H});
    alloc_slot(kIqnDHS2, {B, H});
    alloc_slot(kDBranchLogits, {B, d.N, A});
  }

  actions.assign(static_cast<std::size_t>(B) * d.D, 0);
  astar = astar_iqn = actions;
  pre1.resize(B, H);
  pre2.resize(B, H);
  probs.resize(B, A * NA);
  y.resize(B, d.D);
  for (Mat<T>* m : {&n_pre1, &n_h1, &n_pre2, &n_h2, &t_pre1, &t_h1, &t_pre2, &t_h2}) m->resize(B, H);
  for (Mat<T>* m : {&n_z, &t_z}) m->resize(B, d.Z);
  for (Mat<T>* m : {&n_v, &t_v}) m->resize(B, NA);
  for (Mat<T>* m : {&n_adv, &t_adv, &n_logp, &g_main, &g_cql}) m->resize(B, A * NA);
  d_value_main.resize(B, NA);
  for (Mat<T>* m : {&bw_d_h_s2, &d_pre2, &d_h1, &d_pre1}) m->resize(B, H);
  aux_pre.resize(B, d.AH);
  aux_h.resize(B, d.AH);
  d_aux_h.resize(B, d.AH);
  d_aux_y.resize(B, d.AO);
  if (d.iqn) {
    tau_target.resize(B, d.Np);
    tau_greedy.resize(B, d.K);
    iqn_cos.resize(B * d.N, d.C);
    iqn_phi_pre.resize(B * d.N, H);
    iqn_psi.resize(B * d.N, H);
    iqn_dpsi.resize(B * d.N, H);
    iqn_dphi_pre.resize(B * d.N, H);
    iqn_t_cos.resize(B * d.Np, d.C);
    iqn_t_phi_pre.resize(B * d.Np, H);
    iqn_t_phi.resize(B * d.Np, H);
    iqn_t_psi.resize(B * d.Np, H);
    iqn_g_cos.resize(B * d.K, d.C);
    iqn_g_phi_pre.resize(B * d.K, H);
    iqn_g_phi.resize(B * d.K, H);
    iqn_g_psi.resize(B * d.K, H);
    iqn_g_q.resize(B * d.K, A);
    iqn_targets.resize(B, d.D * d.Np);
  }
  reset_parameters();
}

template <class T>
void CpuModel<T>::alloc_slot(int slot, std::vector<std::int64_t> shape) {
  std::size_t n = 1;
  for (auto s : shape) n *= static_cast<std::size_t>(s);
  slots[slot].assign(n, T(0));
  shapes[slot] = std::move(shape);
}

template <class T>
SlotView CpuModel<T>::slot_view(int index) {
  SlotView v;
  v.is_f64 = std::is_same_v<T, double>;
  v.shape = shapes[index];
  if (index == kAdamMoments) {
    v.data = adam.data();
    v.count = adam.size();
  } else if (index == kParams) {
    v.data = params.data();
    v.count = params.size();
  } else if (index == kBwDHS2Main || index == kBwDHS2Aux || index == kBwDHS2Iqn) {
    if (index == kBwDHS2Iqn && !d.iqn) return SlotView{};
    v.data = bw_d_h_s2.data();
    v.count = static_cast<std::size_t>(bw_d_h_s2.size());
  } else {
    if (slots[index].empty()) return SlotView{};
    v.data = slots[index].data();
    v.count = slots[index].size();
  }
  return v;
}

template <class T>
MatMap<T> CpuModel<T>::param(std::vector<T>& flat, ParamId id) {
  const auto& e = layout[id];
  return MatMap<T>(flat.data() + e.offset, e.rows, e.cols);
}

template <class T>
CMatMap<T> CpuModel<T>::param(const std::vector<T>& flat, ParamId id) const {
  const auto& e = layout[id];
  return CMatMap<T>(flat.data() + e.offset, e.rows, e.cols);
}

template <class T>
CRowMap<T> CpuModel<T>::bias(const std::vector<T>& flat, ParamId id) const {
  const auto& e = layout[id];
  return CRowMap<T>(flat.data() + e.offset, static_cast<Eigen::Index>(e.count));
}

template <class T>
MatMap<T> CpuModel<T>::slot_mat(int index, int rows, int cols) {
  return MatMap<T>(slots[index].data(), rows, cols);
}

template <class T>
MatMap<T> CpuModel<T>::batch_s() {
  return MatMap<T>(slots[kBatch].data(), d.B, d.F);
}
template <class T>
MatMap<T> CpuModel<T>::batch_s_next() {
  return MatMap<T>(slots[kBatch].data() + static_cast<std::size_t>(d.B) * d.F, d.B, d.F);
}
template <class T>
MatMap<T> CpuModel<T>::batch_ret() {
  return MatMap<T>(slots[kBatch].data() + static_cast<std::size_t>(d.B) * 2 * d.F, d.B, 1);
}
template <class T>
MatMap<T> CpuModel<T>::batch_done() {
  return MatMap<T>(slots[kBatch].data() + static_cast<std::size_t>(d.B) * (2 * d.F + 1), d.B, 1);
}
template <class T>
MatMap<T> CpuModel<T>::batch_next_bar() {
  return MatMap<T>(slots[kBatch].data() + static_cast<std::size_t>(d.B) * (2 * d.F + 2), d.B,
                   d.AO);
}

template <class T>
void CpuModel<T>::reset_parameters() {
  std::fill(params.begin(), params.end(), T(0));
  for (const ParamEntry* e : layout.existing()) {
    if (e->fan_in == 0) continue;  // biases start at zero
    CounterRng rng(config.run.seed, DrawStream::Init, static_cast<std::uint32_t>(e->id));
    const double k = 1.0 / std::sqrt(static_cast<double>(e->fan_in));
    const double scale = e->id == kIqnOutW ? config.init.iqn_out_scale : 1.0;
    for (std::size_t i = 0; i < e->count; ++i)
      params[e->offset + i] = static_cast<T>((2.0 * rng.uniform() - 1.0) * k * scale);
  }
  for (ParamId id : {kEncB1, kEncB2}) {
    const ParamEntry& e = layout[id];
    std::fill_n(params.begin() + static_cast<std::ptrdiff_t>(e.offset), e.count,
                static_cast<T>(config.init.encoder_bias));
  }
  target = params;
  std::fill(grads.begin(), grads.end(), T(0));
  std::fill(adam.begin(), adam.end(), T(0));
  adam_t = 0;
}

template <class T>
void CpuModel<T>::load_fold(const TransitionSet& t) {
  auto conv = [](const std::vector<double>& in, std::vector<T>& out) {
    out.resize(in.size());
    std::transform(in.begin(), in.end(), out.begin(), [](double x) { return static_cast<T>(x); });
  };
  pool.count = t.count;
  conv(t.state, pool.state);
  conv(t.next_state, pool.next_state);
  conv(t.ret, pool.ret);
  conv(t.done, pool.done);
  conv(t.next_bar, pool.next_bar);
  pool.action = t.action;
}

template <class T>
void CpuModel<T>::sample(const StepKey& key) {
  const auto fold = static_cast<std::uint32_t>(key.fold);
  const auto step = static_cast<std::uint32_t>(key.step);
  auto s = batch_s();
  auto sn = batch_s_next();
  auto r = batch_ret();
  auto dn = batch_done();
  auto nb = batch_next_bar();
  for (int b = 0; b < d.B; ++b) {
    const std::uint32_t i = u32_to_index(
        draw_u32(key.seed, DrawStream::BatchIndex, fold, step, static_cast<std::uint64_t>(b)),
        static_cast<std::uint32_t>(pool.count));
    for (int f = 0; f < d.F; ++f) {
      s(b, f) = pool.state[static_cast<std::size_t>(i) * d.F + f];
      sn(b, f) = pool.next_state[static_cast<std::size_t>(i) * d.F + f];
    }
    r(b, 0) = pool.ret[i];
    dn(b, 0) = pool.done[i];
    for (int k = 0; k < d.AO; ++k) nb(b, k) = pool.next_bar[static_cast<std::size_t>(i) * d.AO + k];
    for (int k = 0; k < d.D; ++k)
      actions[static_cast<std::size_t>(b) * d.D + k] = pool.action[static_cast<std::size_t>(i) * d.D + k];
  }
  produced(kBatch);
  check(kBatch);
  if (!d.iqn) return;
  auto draw_taus = [&](DrawStream stream, T* out, int n) {
    for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(d.B) * n; ++k)
      out[k] = static_cast<T>(u32_to_open01(draw_u32(key.seed, stream, fold, step, k)));
  };
  draw_taus(DrawStream::Tau, slots[kIqnTau].data(), d.N);
  draw_taus(DrawStream::TauTarget, tau_target.data(), d.Np);
  draw_taus(DrawStream::TauGreedy, tau_greedy.data(), d.K);
  produced(kIqnTau);
}

}  // namespace nanscope

namespace nanscope {

template <class T>
BatchContext CpuModel<T>::batch_context() const {
  using U = std::uint64_t;
  const U B = static_cast<U>(d.B), F = static_cast<U>(d.F);
  const T* base = slots[kBatch].data();
  auto field = [&](const char* name, std::vector<U> shape, const T* p) {
    std::size_t n = 1;
    for (U s : shape) n *= static_cast<std::size_t>(s);
    return NamedArray{name, shape, std::vector<double>(p, p + n), false};
  };
  BatchContext c;
  c.push_back(field("obs", {B, F}, base));
  c.push_back(field("next_obs", {B, F}, base + B * F));
  c.push_back(field("returns", {B}, base + 2 * B * F));
  c.push_back(field("done", {B}, base + 2 * B * F + B));
  c.push_back(field("next_bar", {B, static_cast<U>(d.AO)}, base + 2 * B * F + 2 * B));
  c.push_back(NamedArray{"actions", {B, static_cast<U>(d.D)},
                         std::vector<double>(actions.begin(), actions.end()), true});
  if (d.iqn) {
    c.push_back(field("tau", {B, static_cast<U>(d.N)}, slots[kIqnTau].data()));
    c.push_back(field("tau_target", {B, static_cast<U>(d.Np)}, tau_target.data()));
    c.push_back(field("tau_greedy", {B, static_cast<U>(d.K)}, tau_greedy.data()));
  }
  return c;
}

template <class T>
void CpuModel<T>::set_batch(const BatchContext& c) {
  const BatchContext expected = batch_context();  // names and shapes of this network
  for (const NamedArray& want : expected) {
    auto it = std::find_if(c.begin(), c.end(), [&](const NamedArray& a) { return a.name == want.name; });
    if (it == c.end()) throw DataError("batch context: missing field '" + want.name + "'");
    if (it->shape != want.shape || it->values.size() != want.values.size())
      throw DataError("batch context: field '" + want.name + "' has the wrong shape for this config");
  }
  auto get = [&](const char* name) -> const std::vector<double>& {
    return std::find_if(c.begin(), c.end(), [&](const NamedArray& a) { return a.name == name; })->values;
  };
  const std::size_t B = static_cast<std::size_t>(d.B), F = static_cast<std::size_t>(d.F);
  T* base = slots[kBatch].data();
  auto put = [](const std::vector<double>& v, T* out) {
    std::transform(v.begin(), v.end(), out, [](double x) { return static_cast<T>(x); });
  };
  put(get("obs"), base);
  put(get("next_obs"), base + B * F);
  put(get("returns"), base + 2 * B * F);
  put(get("done"), base + 2 * B * F + B);
  put(get("next_bar"), base + 2 * B * F + 2 * B);
  const auto& a = get("actions");
  std::transform(a.begin(), a.end(), actions.begin(), [](double x) { return static_cast<std::int32_t>(x); });
  if (d.iqn) {
    put(get("tau"), slots[kIqnTau].data());
    put(get("tau_target"), tau_target.data());
    put(get("tau_greedy"), tau_greedy.data());
  }
}

}  // namespace nanscope
