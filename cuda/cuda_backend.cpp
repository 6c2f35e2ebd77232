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
      state_(L_.total()),
      kept_(L_.total()),
      nets_(d_),
      heads_(d_),
      iqn_(d_),
      bw_(d_, L_.total()),
      bw_copies_(bw_.bw.size()),
      norms_(1 + kGroupCount),
      opt_(L_, c.optim, stream_.s),
      scalars_(kScCount),
      gstep_(1),
      checks_(c_, d_, *this, stream_.s) {
  for (int s = 0; s < kBuiltinSlotCount; ++s) slots_.shapes[s] = slot_shape(d_, s, L_.total());
  const float* batch = sampler_.batch();
  const BatchSlotOffsets at = batch_slot_offsets(d_);
  batch_.s = batch + at.obs;
  batch_.s_next = batch + at.next_obs;
  batch_.ret = batch + at.returns;
  batch_.done = batch + at.done;
  batch_.next_bar = batch + at.next_bar;
  fwd_ = ForwardState{.s = batch_.s,
                      .next_bar = batch_.next_bar,
                      .actions = sampler_.actions(),
                      .h1 = nets_.online.h1.get(),
                      .pre1 = nets_.online.pre1.get(),
                      .pre2 = nets_.online.pre2.get(),
                      .h2 = nets_.online.h2.get(),
                      .z = nets_.online.z.get(),
                      .logp = nets_.online.logp.get(),
                      .q = heads_.q.get(),
                      .m = heads_.m.get(),
                      .y = heads_.y.get(),
                      .cql_lse = heads_.lse.get(),
                      .ve = heads_.ve.get(),
                      .tau = sampler_.tau(),
                      .iqn_cos = iqn_.cos.get(),
                      .iqn_phi_pre = iqn_.phi_pre.get(),
                      .iqn_phi = iqn_.phi.get(),
                      .iqn_psi = iqn_.psi.get(),
                      .iqn_q = iqn_.q.get(),
                      .iqn_targets = iqn_.targets.get(),
                      .aux_pre = heads_.aux_pre.get(),
                      .aux_h = heads_.aux_h.get(),
                      .aux_pred = heads_.pred.get()};
  build_slot_buffers();
  const auto& l = c.loss;
  loss_weights_.f = LossWeights{static_cast<float>(l.lambda_mse), static_cast<float>(l.alpha_cql),
                                static_cast<float>(l.lambda_iqn), static_cast<float>(l.lambda_aux),
                                static_cast<float>(l.lambda_ens)};
  loss_weights_.d = LossWeightsD{l.lambda_mse, l.lambda_iqn, l.lambda_aux, l.lambda_ens, d_.iqn};
  device_name_ = std::move(device_name);
  // Every slot buffer and every piece of step state starts at zero, as on the CPU backend: a
  // buffer inspected before its first step shows zeros, never leftover device memory.
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    // The buffers are what the slot table says they are (shapes are what the dumps store).
    for (const DevBuf b : {read_buf(s), write_buf(s)})
      if (b.n != element_count(slots_.shapes[s]))
        throw InternalError(fmt::format("CUDA backend: slot {} has {} elements, its shape says {}",
                                        s, b.n, element_count(slots_.shapes[s])));
    if (const DevBuf b = write_buf(s); b.p) zero(b.p, b.n * sizeof(float));
  }
  for (auto* a : {&bw_copies_.main, &bw_copies_.aux, &kept_.params, &kept_.target, &kept_.adam})
    zero(a->get(), a->size() * sizeof(float));
  zero(scalars_.get(), scalars_.size() * sizeof(double));
  if (c_.watch.needs_update_norms()) {
    ratio_.delta = DeviceArray<float>(L_.total());
    ratio_.update_norms = DeviceArray<float>(1 + kGroupCount);
    ratio_.weight_norms = DeviceArray<float>(1 + kGroupCount);
    zero(ratio_.delta.get(),
         ratio_.delta.size() * sizeof(float));  // the padding between entries stays zero
  }
  zero(kept_.t.get(), sizeof(std::int64_t));
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
  upload(state_.params.get(), p);
  upload(state_.target.get(), p);
  NANSCOPE_CUDA_CHECK(
      cudaMemsetAsync(state_.adam.get(), 0, state_.adam.size() * sizeof(float), stream_.s));
  NANSCOPE_CUDA_CHECK(
      cudaMemsetAsync(bw_.grads.get(), 0, bw_.grads.size() * sizeof(float), stream_.s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(state_.t.get(), 0, sizeof(std::int64_t), stream_.s));
}

void CudaBackend::load_fold(const TransitionSet& t) {
  sync();
  sampler_.load_fold(t);
  drop_graph();  // the fold's arrays (and the pool size the gather uses) changed
}

SlotView CudaBackend::slot(int index) {
  if (slots_.shapes[index].empty()) return {};
  const DevBuf b = read_buf(index);
  return mirror_view(index, b.p, b.n);
}

SlotView CudaBackend::mirror_view(int slot, const float* dev, std::size_t n) {
  auto& mirror = slots_.mirrors[static_cast<std::size_t>(slot)];
  mirror.resize(n);
  download(mirror.data(), dev, n);
  SlotView v;
  v.data = mirror.data();
  v.count = mirror.size();
  v.shape = slots_.shapes[slot];
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
  download(h.data(), (target ? state_.target : state_.params).get() + e->offset, e->count);
  return std::vector<double>(h.begin(), h.end());
}

void CudaBackend::write_param(const std::string& name, const std::vector<double>& values) {
  flush_checks();
  const ParamEntry* e = entry(name);
  if (values.size() != e->count)
    throw InternalError(
        fmt::format("parameter '{}' has {} elements, got {}", name, e->count, values.size()));
  upload(state_.params.get() + e->offset, std::vector<float>(values.begin(), values.end()));
}

std::int64_t CudaBackend::adam_step() const {
  std::int64_t t = 0;
  download(&t, state_.t.get(), 1);
  return t;
}

void CudaBackend::write_state(const StateSnapshot& s) {
  flush_checks();
  std::vector<float> p(L_.total()), t(L_.total()), a(2 * L_.total());
  download(p.data(), state_.params.get(), p.size());  // padding stays as it is (zero)
  download(t.data(), state_.target.get(), t.size());
  download(a.data(), state_.adam.get(), a.size());
  std::int64_t adam_t = 0;
  unpack_state(L_, s, p, t, a, adam_t);
  upload(state_.params.get(), p);
  upload(state_.target.get(), t);
  upload(state_.adam.get(), a);
  upload(state_.t.get(), std::vector<std::int64_t>{adam_t});
}

void CudaBackend::keep_state() {
  copy_state_to(kept_);
}

// Device to device on the step's stream, after the work queued before it: graph-capturable, and
// between two graph launches it waits for nothing on the host.
void CudaBackend::copy_state_to(TrainerState& dst) {
  copy(dst.params.get(), state_.params.get(), state_.params.size());
  copy(dst.target.get(), state_.target.get(), state_.target.size());
  copy(dst.adam.get(), state_.adam.get(), state_.adam.size());
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst.t.get(), state_.t.get(), sizeof(std::int64_t),
                                      cudaMemcpyDeviceToDevice, stream_.s));
}

void CudaBackend::read_kept_state(StateSnapshot& s) const {
  read_state_at(kept_.params.get(), kept_.target.get(), kept_.adam.get(), kept_.t.get(), s);
}

void CudaBackend::reserve_checkpoints(int capacity) {
  sync();
  checkpoints_.clear();
  checkpoints_.reserve(static_cast<std::size_t>(capacity));
  for (int i = 0; i < capacity; ++i) checkpoints_.emplace_back(state_.params.size());
}

void CudaBackend::keep_checkpoint(int index) {
  copy_state_to(checkpoints_.at(static_cast<std::size_t>(index)));
}

void CudaBackend::read_checkpoint(int index, StateSnapshot& s) const {
  const TrainerState& c = checkpoints_.at(static_cast<std::size_t>(index));
  read_state_at(c.params.get(), c.target.get(), c.adam.get(), c.t.get(), s);
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

DevBuf CudaBackend::read_buf(int slot) {
  if (slot == kBwDHS2Main) return of(bw_copies_.main);
  if (slot == kBwDHS2Aux) return of(bw_copies_.aux);
  return write_buf(slot);
}

DevBuf CudaBackend::write_buf(int slot) {
  return slots_.shapes[slot].empty() ? DevBuf{} : slots_.live[static_cast<std::size_t>(slot)];
}

// The slot-to-buffer table, built once: every slot names the device array its producer writes
// (a slot the run has not, an IQN slot without the head, is never read through it).
void CudaBackend::build_slot_buffers() {
  const auto buf = sampler_.buffers();
  const std::pair<int, DevBuf> table[] = {
      {kBatch, DevBuf{buf.batch, buf.batch_count}},
      {kHS1, of(nets_.online.h1)},
      {kHS2, of(nets_.online.h2)},
      {kBnZ, of(nets_.online.z)},
      {kValueLogits, of(nets_.online.v)},
      {kAdvLogits, of(nets_.online.adv)},
      {kLogProbs, of(nets_.online.logp)},
      {kTargetLogProbs, of(nets_.target_next.logp)},
      {kProjTarget, of(heads_.m)},
      {kC51Loss, of(heads_.c51)},
      {kQExpected, of(heads_.q)},
      {kCqlLse, of(heads_.lse)},
      {kIqnTau, DevBuf{buf.tau, buf.tau_count}},
      {kIqnPhi, of(iqn_.phi)},
      {kIqnQuantiles, of(iqn_.q)},
      {kIqnTargetQuantiles, of(iqn_.t_q)},
      {kIqnLoss, of(iqn_.loss)},
      {kAuxPredNb, of(heads_.pred)},
      {kAuxLoss, of(heads_.aux_loss)},
      {kEnsembleLogits, of(heads_.ve)},
      {kTotalLoss, of(heads_.total)},
      {kGradNorm, of(norms_)},
      {kAdamMoments, of(state_.adam)},
      {kParams, of(state_.params)},
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
      {kIqnCosFeatures, of(iqn_.cos)},
  };
  static_assert(sizeof(table) / sizeof(table[0]) == kBuiltinSlotCount);
  std::uint64_t named = 0;
  for (const auto& [slot, b] : table) {
    slots_.live[static_cast<std::size_t>(slot)] = b;
    named |= std::uint64_t{1} << slot;
  }
  if (named != (std::uint64_t{1} << kBuiltinSlotCount) - 1)
    throw InternalError("CUDA backend: the slot-to-buffer table names a slot twice");
}

std::vector<double> CudaBackend::download_d(const float* dev, std::size_t n) const {
  std::vector<float> h(n);
  download(h.data(), dev, n);
  return std::vector<double>(h.begin(), h.end());
}

void CudaBackend::read_state_at(const float* p, const float* t, const float* a,
                                const std::int64_t* adam_t, StateSnapshot& s) const {
  std::vector<float> hp(state_.params.size()), ht(state_.target.size()), ha(state_.adam.size());
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
