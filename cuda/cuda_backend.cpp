// CudaBackend: construction, the backend's state (parameters, target, Adam, the kept pre-update
// copy), the batch and the slot buffers as the host sees them, and the stream-ordered transfers.
// The class and its design are described in cuda_backend_impl.h.
#include "cuda_backend.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "cuda_backend_impl.h"
#include "device_probe.h"
#include "model/batch_context.h"
#include "model/memory_estimate.h"
#include "model/param_init.h"
#include "model/slot_shapes.h"
#include "model/state_pack.h"

namespace nanscope::cuda {

CudaBackend::CudaBackend(const Config& c, std::string device_name)
    : c_(c),
      d_(Dims::from(c)),
      L_(d_),
      blas_(stream_.s),
      lanes_(stream_.s, blas_),
      sampler_(SamplerShape{d_.B, d_.N, d_.Np, d_.K, d_.iqn}, stream_.s),
      params_(L_.total()),
      target_(L_.total()),
      adam_(2 * L_.total()),
      kept_params_(L_.total()),
      kept_target_(L_.total()),
      kept_adam_(2 * L_.total()),
      online_(d_),
      online_next_(d_),
      target_next_(d_),
      q_(static_cast<std::size_t>(d_.B) * d_.A),
      q_next_(q_.size()),
      astar_(static_cast<std::size_t>(d_.B) * d_.D),
      m_(static_cast<std::size_t>(d_.B) * d_.D * d_.NA),
      c51_(d_.B),
      lse_(static_cast<std::size_t>(d_.B) * d_.D),
      y_(lse_.size()),
      mse_part_(d_.B),
      iqn_(d_),
      aux_pre_(static_cast<std::size_t>(d_.B) * d_.AH),
      aux_h_(aux_pre_.size()),
      pred_(static_cast<std::size_t>(d_.B) * d_.AO),
      aux_loss_(d_.B),
      ve_(static_cast<std::size_t>(d_.E) * d_.B * d_.NA),
      ens_part_(static_cast<std::size_t>(d_.E) * d_.B),
      total_(1),
      bw_(d_, L_.total()),
      bw33_(bw_.bw.size()),
      bw34_(bw_.bw.size()),
      norms_(1 + kGroupCount),
      opt_(L_, c.optim, stream_.s),
      bank_(c.run.steps_per_fold, stream_.s, c.sentinel.health),
      scalars_(kScCount),
      records_(static_cast<std::size_t>(c.run.steps_per_fold) * sizeof(StepStatusRecord)),
      adam_t_dev_(1),
      gstep_(1),
      updated_(1) {
  for (int s = 0; s < kSlotCount; ++s) shapes_[s] = slot_shape(d_, s, L_.total());
  const float* batch = sampler_.batch();
  const BatchSlotOffsets at = batch_slot_offsets(d_);
  s_ = batch + at.obs;
  s_next_ = batch + at.next_obs;
  ret_ = batch + at.returns;
  done_ = batch + at.done;
  next_bar_ = batch + at.next_bar;
  fwd_ = ForwardState{.s = s_,
                      .next_bar = next_bar_,
                      .actions = sampler_.actions(),
                      .h1 = online_.h1.get(),
                      .pre1 = online_.pre1.get(),
                      .pre2 = online_.pre2.get(),
                      .h2 = online_.h2.get(),
                      .z = online_.z.get(),
                      .logp = online_.logp.get(),
                      .q = q_.get(),
                      .m = m_.get(),
                      .y = y_.get(),
                      .cql_lse = lse_.get(),
                      .ve = ve_.get(),
                      .tau = sampler_.tau(),
                      .iqn_cos = iqn_.cos.get(),
                      .iqn_phi_pre = iqn_.phi_pre.get(),
                      .iqn_phi = iqn_.phi.get(),
                      .iqn_psi = iqn_.psi.get(),
                      .iqn_q = iqn_.q.get(),
                      .iqn_targets = iqn_.targets.get(),
                      .aux_pre = aux_pre_.get(),
                      .aux_h = aux_h_.get(),
                      .aux_pred = pred_.get()};
  build_slot_buffers();
  const auto& l = c.loss;
  weights_ = LossWeights{static_cast<float>(l.lambda_mse), static_cast<float>(l.alpha_cql),
                         static_cast<float>(l.lambda_iqn), static_cast<float>(l.lambda_aux),
                         static_cast<float>(l.lambda_ens)};
  weights_d_ = LossWeightsD{l.lambda_mse, l.lambda_iqn, l.lambda_aux, l.lambda_ens, d_.iqn};
  device_name_ = std::move(device_name);
  setup_ = slot_setup(c_);
  reserved_exec_.fill(-1);
  // Every slot buffer and every piece of step state starts at zero, as on the CPU backend: a
  // buffer inspected before its first step shows zeros, never leftover device memory.
  for (int s = 0; s < kSlotCount; ++s) {
    // The buffers are what the slot table says they are (shapes are what the dumps store).
    for (const DevBuf b : {read_buf(s), write_buf(s)})
      if (b.n != element_count(shapes_[s]))
        throw InternalError(fmt::format("CUDA backend: slot {} has {} elements, its shape says {}",
                                        s, b.n, element_count(shapes_[s])));
    if (const DevBuf b = write_buf(s); b.p) zero(b.p, b.n * sizeof(float));
  }
  for (auto* a : {&bw33_, &bw34_, &kept_params_, &kept_target_, &kept_adam_})
    zero(a->get(), a->size() * sizeof(float));
  zero(scalars_.get(), scalars_.size() * sizeof(double));
  zero(records_.get(), records_.size());
  if (c_.watch.needs_update_norms()) {
    delta_ = DeviceArray<float>(L_.total());
    update_norms_ = DeviceArray<float>(1 + kGroupCount);
    weight_norms_ = DeviceArray<float>(1 + kGroupCount);
    zero(delta_.get(), delta_.size() * sizeof(float));  // the padding between entries stays zero
  }
  zero(kept_t_.get(), sizeof(std::int64_t));
  zero(gstep_.get(), sizeof(std::int64_t));
  reset_parameters();
}

CudaBackend::~CudaBackend() {
  try {
    sync();
  } catch (...) {
  }
  drop_graph();
}

void CudaBackend::reset_parameters() {
  const std::vector<double> init = initial_parameters(c_, L_);
  const std::vector<float> p(init.begin(), init.end());
  upload(params_.get(), p);
  upload(target_.get(), p);
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(adam_.get(), 0, adam_.size() * sizeof(float), stream_.s));
  NANSCOPE_CUDA_CHECK(
      cudaMemsetAsync(bw_.grads.get(), 0, bw_.grads.size() * sizeof(float), stream_.s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(adam_t_dev_.get(), 0, sizeof(std::int64_t), stream_.s));
}

void CudaBackend::load_fold(const TransitionSet& t) {
  sync();
  sampler_.load_fold(t);
  drop_graph();  // the fold's arrays (and the pool size the gather uses) changed
}

SlotView CudaBackend::slot(int index) {
  if (shapes_[index].empty()) return {};
  const DevBuf b = read_buf(index);
  return mirror_view(index, b.p, b.n);
}

SlotView CudaBackend::mirror_view(int slot, const float* dev, std::size_t n) {
  auto& mirror = mirrors_[static_cast<std::size_t>(slot)];
  mirror.resize(n);
  download(mirror.data(), dev, n);
  SlotView v;
  v.data = mirror.data();
  v.count = mirror.size();
  v.shape = shapes_[slot];
  return v;
}

std::vector<Overwritten> CudaBackend::inject_slot(int index, std::optional<std::size_t> element,
                                                  double value) {
  flush_checks();  // a check already due sees the buffer as it was at its site
  const DevBuf b = write_buf(index);
  float* p = b.p;
  const std::size_t n = b.n;
  if (!p || (element && *element >= n))
    throw InternalError(fmt::format("inject_slot: slot {} element out of range", index));
  std::vector<Overwritten> old;
  if (element) {
    float x = 0;
    download(&x, p + *element, 1);
    old.push_back({*element, x});
    const float v = static_cast<float>(value);
    upload(p + *element, std::vector<float>{v});
  } else {
    std::vector<float> h(n);
    download(h.data(), p, n);
    for (std::size_t i = 0; i < n; ++i) old.push_back({i, h[i]});
    upload(p, std::vector<float>(n, static_cast<float>(value)));
  }
  return old;
}

std::vector<double> CudaBackend::read_param(const std::string& name, bool target) const {
  const ParamEntry* e = entry(name);
  std::vector<float> h(e->count);
  download(h.data(), (target ? target_ : params_).get() + e->offset, e->count);
  return std::vector<double>(h.begin(), h.end());
}

void CudaBackend::write_param(const std::string& name, const std::vector<double>& values) {
  flush_checks();
  const ParamEntry* e = entry(name);
  if (values.size() != e->count)
    throw InternalError(
        fmt::format("parameter '{}' has {} elements, got {}", name, e->count, values.size()));
  upload(params_.get() + e->offset, std::vector<float>(values.begin(), values.end()));
}

std::int64_t CudaBackend::adam_step() const {
  std::int64_t t = 0;
  download(&t, adam_t_dev_.get(), 1);
  return t;
}

void CudaBackend::write_state(const StateSnapshot& s) {
  flush_checks();
  std::vector<float> p(L_.total()), t(L_.total()), a(2 * L_.total());
  download(p.data(), params_.get(), p.size());  // padding stays as it is (zero)
  download(t.data(), target_.get(), t.size());
  download(a.data(), adam_.get(), a.size());
  std::int64_t adam_t = 0;
  unpack_state(L_, s, p, t, a, adam_t);
  upload(params_.get(), p);
  upload(target_.get(), t);
  upload(adam_.get(), a);
  upload(adam_t_dev_.get(), std::vector<std::int64_t>{adam_t});
}

void CudaBackend::keep_state() {  // device-to-device, graph-capturable
  copy(kept_params_.get(), params_.get(), params_.size());
  copy(kept_target_.get(), target_.get(), target_.size());
  copy(kept_adam_.get(), adam_.get(), adam_.size());
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(kept_t_.get(), adam_t_dev_.get(), sizeof(std::int64_t),
                                      cudaMemcpyDeviceToDevice, stream_.s));
}

void CudaBackend::read_kept_state(StateSnapshot& s) const {
  read_state_at(kept_params_.get(), kept_target_.get(), kept_adam_.get(), kept_t_.get(), s);
}

BatchContext CudaBackend::batch_context() const {
  auto buf = const_cast<DeviceSampler&>(sampler_).buffers();
  return batch_context_at({buf.batch, buf.actions, buf.tau, buf.tau_target, buf.tau_greedy});
}

BatchContext CudaBackend::batch_context_at(const BatchAt& at) const {
  BatchArrays a;
  a.batch = download_d(at.batch, sampler_.batch_count());
  a.actions.resize(static_cast<std::size_t>(d_.B) * d_.D);
  download(a.actions.data(), at.actions, a.actions.size());
  if (d_.iqn) {
    a.tau = download_d(at.tau, static_cast<std::size_t>(d_.B) * d_.N);
    a.tau_target = download_d(at.tau_target, static_cast<std::size_t>(d_.B) * d_.Np);
    a.tau_greedy = download_d(at.tau_greedy, static_cast<std::size_t>(d_.B) * d_.K);
  }
  return to_batch_context(d_, a);
}

void CudaBackend::set_batch(const BatchContext& b) {
  flush_checks();
  const BatchArrays a = from_batch_context(d_, b);
  auto buf = sampler_.buffers();
  auto up = [&](float* p, const std::vector<double>& v) {
    upload(p, std::vector<float>(v.begin(), v.end()));
  };
  up(buf.batch, a.batch);
  upload(buf.actions, a.actions);
  if (d_.iqn) {
    up(buf.tau, a.tau);
    up(buf.tau_target, a.tau_target);
    up(buf.tau_greedy, a.tau_greedy);
  }
}

CudaBackend::DevBuf CudaBackend::read_buf(int slot) {
  if (slot == kBwDHS2Main) return of(bw33_);
  if (slot == kBwDHS2Aux) return of(bw34_);
  return write_buf(slot);
}

CudaBackend::DevBuf CudaBackend::write_buf(int slot) {
  return shapes_[slot].empty() ? DevBuf{} : slot_bufs_[static_cast<std::size_t>(slot)];
}

// The slot-to-buffer table, built once: every slot names the device array its producer writes
// (a slot the run has not, an IQN slot without the head, is never read through it).
void CudaBackend::build_slot_buffers() {
  const auto buf = sampler_.buffers();
  const std::pair<int, DevBuf> table[] = {
      {kBatch, DevBuf{buf.batch, buf.batch_count}},
      {kHS1, of(online_.h1)},
      {kHS2, of(online_.h2)},
      {kBnZ, of(online_.z)},
      {kValueLogits, of(online_.v)},
      {kAdvLogits, of(online_.adv)},
      {kLogProbs, of(online_.logp)},
      {kTargetLogProbs, of(target_next_.logp)},
      {kProjTarget, of(m_)},
      {kC51Loss, of(c51_)},
      {kQExpected, of(q_)},
      {kCqlLse, of(lse_)},
      {kIqnTau, DevBuf{buf.tau, buf.tau_count}},
      {kIqnPhi, of(iqn_.phi)},
      {kIqnQuantiles, of(iqn_.q)},
      {kIqnTargetQuantiles, of(iqn_.t_q)},
      {kIqnLoss, of(iqn_.loss)},
      {kAuxPredNb, of(pred_)},
      {kAuxLoss, of(aux_loss_)},
      {kEnsembleLogits, of(ve_)},
      {kTotalLoss, of(total_)},
      {kGradNorm, of(norms_)},
      {kAdamMoments, of(adam_)},
      {kParams, of(params_)},
      {kDValueLogits, of(bw_.d_value)},
      {kDAdvLogits, of(bw_.d_adv)},
      {kIqnTrunkM, of(bw_.trunk_m)},
      {kIqnDHS2, of(bw_.iqn_dh)},
      {kDBranchLogits, of(bw_.iqn_dq)},
      {kCqlDValueLogits, of(bw_.cql_dv)},
      {kAuxDHS2Nb, of(bw_.aux_dh)},
      {kEnsembleDLogits, of(bw_.d_ve)},
      {kBnDConcat, of(bw_.dz)},
      {kBwDHS2Main, of(bw_.bw)},  // 33, 34, 35: bw_d_h_s2 (33 and 34 are checked on copies)
      {kBwDHS2Aux, of(bw_.bw)},
      {kBwDHS2Iqn, of(bw_.bw)},
  };
  static_assert(sizeof(table) / sizeof(table[0]) == kSlotCount);
  std::uint64_t named = 0;
  for (const auto& [slot, b] : table) {
    slot_bufs_[static_cast<std::size_t>(slot)] = b;
    named |= std::uint64_t{1} << slot;
  }
  if (named != (std::uint64_t{1} << kSlotCount) - 1)
    throw InternalError("CUDA backend: the slot-to-buffer table names a slot twice");
}

std::vector<double> CudaBackend::download_d(const float* dev, std::size_t n) const {
  std::vector<float> h(n);
  download(h.data(), dev, n);
  return std::vector<double>(h.begin(), h.end());
}

void CudaBackend::read_state_at(const float* p, const float* t, const float* a,
                                const std::int64_t* adam_t, StateSnapshot& s) const {
  std::vector<float> hp(params_.size()), ht(target_.size()), ha(adam_.size());
  download(hp.data(), p, hp.size());
  download(ht.data(), t, ht.size());
  download(ha.data(), a, ha.size());
  std::int64_t step = 0;
  download(&step, adam_t, 1);
  pack_state(L_, hp, ht, ha, step, s);
}

const ParamEntry* CudaBackend::entry(const std::string& name) const {
  const ParamEntry* e = L_.find(name);
  if (!e) throw UsageError(fmt::format("unknown parameter '{}'", name));
  return e;
}

std::unique_ptr<Backend> make_cuda_backend(const Config& config) {
  if (config.model.precision != Precision::Float32)
    throw ConfigError(
        fmt::format("config: key 'model.precision': the CUDA backend computes in float32, "
                    "not {} (use --backend cpu for float64)",
                    name_of(config.model.precision)));
  const DeviceProbe probe = probe_devices();
  if (probe.count == 0) throw DeviceError("no usable CUDA device: " + probe.error);
  // Before any device buffer: what the config asks of the device and of the host (mirrors).
  std::size_t free_bytes = 0, total_bytes = 0;
  NANSCOPE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const MemoryEstimate e = estimate_memory(config);
  require_memory(config, e.device_bytes, static_cast<double>(free_bytes),
                 "device (" + probe.name + ")");
  require_host_memory(config);
  return std::make_unique<CudaBackend>(config, probe.name);
}

}  // namespace nanscope::cuda
