// CpuModel: construction, buffers, views, parameter initialisation and the sample phase.
// Included by cpu_model_f32.cpp and cpu_model_f64.cpp, which instantiate it.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"
#include "data/philox.h"
#include "model/batch_context.h"
#include "model/cpu_model.h"
#include "model/param_init.h"
#include "model/slot_shapes.h"

namespace nanscope {

template <class T>
CpuModel<T>::CpuModel(const Config& c) : config(c), d(Dims::from(c)), layout(d) {
  const int B = d.B, H = d.H, NA = d.NA, A = d.A;
  params.assign(layout.total(), T(0));
  target = grads = params;
  adam.assign(2 * layout.total(), T(0));

  // A slot that is a view (adam, params, bw_d_h_s2: SlotInfo::storage) owns no buffer.
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    shapes[s] = slot_shape(d, s, layout.total());
    const bool own = builtin_slot(s).storage == SlotStorage::Own;
    if (own && !shapes[s].empty()) slots[s].assign(element_count(shapes[s]), T(0));
  }

  actions.assign(static_cast<std::size_t>(B) * d.D, 0);
  astar = astar_iqn = actions;
  pre1.resize(B, H);
  pre2.resize(B, H);
  probs.resize(B, A * NA);
  y.resize(B, d.D);
  for (Mat<T>* m : {&n_pre1, &n_h1, &n_pre2, &n_h2, &t_pre1, &t_h1, &t_pre2, &t_h2})
    m->resize(B, H);
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
  for (int s = 0; s < kBuiltinSlotCount; ++s)  // a work buffer named for each such slot, sized
    if (builtin_slot(s).storage == SlotStorage::Work &&
        static_cast<std::size_t>(work_slot_buffer(s).size()) != element_count(shapes[s]))
      throw InternalError(fmt::format("slot {}'s work buffer is not its shape", s));
  reset_parameters();
}

// This backend's slot-to-buffer table for the slots that are work buffers of the step (the CUDA
// backend's is CudaBackend::build_slot_buffers).
template <class T>
Mat<T>& CpuModel<T>::work_slot_buffer(int index) {
  static const std::vector<std::pair<int, Mat<T> CpuModel::*>> table = {
      {kIqnCosFeatures, &CpuModel::iqn_cos},
  };
  for (const auto& [slot, buffer] : table)
    if (slot == index) return this->*buffer;
  throw InternalError(fmt::format("slot {} is a work buffer the CPU backend does not name", index));
}

template <class T>
SlotView CpuModel<T>::slot_view(int index) {
  SlotView v;
  v.type = std::is_same_v<T, double> ? ElementType::Float64 : ElementType::Float32;
  v.shape = shapes[index];
  switch (builtin_slot(index).storage) {
    case SlotStorage::AdamMoments:
      v.data = adam.data();
      v.count = adam.size();
      return v;
    case SlotStorage::Params:
      v.data = params.data();
      v.count = params.size();
      return v;
    case SlotStorage::BackwardTrunk:
      if (shapes[index].empty()) return SlotView{};  // a stage absent this run (no IQN head)
      v.data = bw_d_h_s2.data();
      v.count = static_cast<std::size_t>(bw_d_h_s2.size());
      return v;
    case SlotStorage::Work: {
      Mat<T>& work = work_slot_buffer(index);
      if (shapes[index].empty() || work.size() == 0) return SlotView{};
      v.data = work.data();
      v.count = static_cast<std::size_t>(work.size());
      return v;
    }
    case SlotStorage::Own:
      if (slots[index].empty()) return SlotView{};
      v.data = slots[index].data();
      v.count = slots[index].size();
      return v;
  }
  return SlotView{};
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
  T* data = builtin_slot(index).storage == SlotStorage::Work ? work_slot_buffer(index).data()
                                                             : slots[index].data();
  return MatMap<T>(data, rows, cols);
}

template <class T>
MatMap<T> CpuModel<T>::batch_s() {
  return MatMap<T>(slots[kBatch].data(), d.B, d.F);
}
template <class T>
MatMap<T> CpuModel<T>::batch_s_next() {
  return MatMap<T>(slots[kBatch].data() + batch_slot_offsets(d).next_obs, d.B, d.F);
}
template <class T>
MatMap<T> CpuModel<T>::batch_ret() {
  return MatMap<T>(slots[kBatch].data() + batch_slot_offsets(d).returns, d.B, 1);
}
template <class T>
MatMap<T> CpuModel<T>::batch_done() {
  return MatMap<T>(slots[kBatch].data() + batch_slot_offsets(d).done, d.B, 1);
}
template <class T>
MatMap<T> CpuModel<T>::batch_next_bar() {
  return MatMap<T>(slots[kBatch].data() + batch_slot_offsets(d).next_bar, d.B, d.AO);
}

template <class T>
void CpuModel<T>::reset_parameters() {
  const std::vector<double> init = initial_parameters(config, layout);
  std::transform(init.begin(), init.end(), params.begin(),
                 [](double x) { return static_cast<T>(x); });
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
      actions[static_cast<std::size_t>(b) * d.D + k] =
          pool.action[static_cast<std::size_t>(i) * d.D + k];
  }
  // Every draw of the step is made before the first call site, so that whatever fires first (the
  // batch included) sees the step's own draws: a dump's context is always the step's.
  if (d.iqn) {
    auto draw_taus = [&](DrawStream stream, T* out, int n) {
      for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(d.B) * n; ++k)
        out[k] = static_cast<T>(u32_to_open01(draw_u32(key.seed, stream, fold, step, k)));
    };
    draw_taus(DrawStream::Tau, slots[kIqnTau].data(), d.N);
    draw_taus(DrawStream::TauTarget, tau_target.data(), d.Np);
    draw_taus(DrawStream::TauGreedy, tau_greedy.data(), d.K);
  }
  produced(kBatch);
  check(kBatch);
  if (d.iqn) produced(kIqnTau);
}

}  // namespace nanscope

namespace nanscope {

template <class T>
BatchContext CpuModel<T>::batch_context() const {
  BatchArrays a;
  a.batch.assign(slots[kBatch].begin(), slots[kBatch].end());
  a.actions = actions;
  if (d.iqn) {
    a.tau.assign(slots[kIqnTau].begin(), slots[kIqnTau].end());
    a.tau_target.assign(tau_target.data(), tau_target.data() + tau_target.size());
    a.tau_greedy.assign(tau_greedy.data(), tau_greedy.data() + tau_greedy.size());
  }
  return to_batch_context(d, a);
}

template <class T>
void CpuModel<T>::set_batch(const BatchContext& c) {
  const BatchArrays a = from_batch_context(d, c);
  auto put = [](const std::vector<double>& v, T* out) {
    std::transform(v.begin(), v.end(), out, [](double x) { return static_cast<T>(x); });
  };
  put(a.batch, slots[kBatch].data());
  actions = a.actions;
  if (d.iqn) {
    put(a.tau, slots[kIqnTau].data());
    put(a.tau_target, tau_target.data());
    put(a.tau_greedy, tau_greedy.data());
  }
}

}  // namespace nanscope
