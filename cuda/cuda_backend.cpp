// CudaBackend: the verified device pieces (sampler, dense layers, heads, losses, backward,
// optimizer, sentinel bank) run phase by phase on one stream, or as one captured CUDA graph of the
// same phase functions. The slot call sites are the CPU backend's, in the same order: the
// observer's `produced` (fault injection) right after each producer, then its `check`, which the
// session turns into a device check. Everything that changes from step to step (fold and step of
// the draws, the bank's step, the global step, Adam's t) is read from device memory, set by tiny
// kernels before the step, so a replayed graph is the same step as an ungraphed one. A step makes
// no device-to-host copy unless the session reads its record.
#include "cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "backward.h"
#include "batch_sampler.h"
#include "c51_heads.h"
#include "core/errors.h"
#include "device_array.h"
#include "device_probe.h"
#include "forward_losses.h"
#include "model/batch_context.h"
#include "model/param_init.h"
#include "model/slot_shapes.h"
#include "model/state_pack.h"
#include "optimizer.h"
#include "sentinel_check.h"
#include "step_record.h"

namespace nanscope::cuda {
namespace {

// The backend's stream, created first and destroyed last.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { NANSCOPE_CUDA_CHECK(cudaStreamCreate(&s)); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

class CudaBackend final : public Backend, public DeviceSentinel {
 public:
  explicit CudaBackend(const Config& c)
      : c_(c), d_(Dims::from(c)), L_(d_), blas_(stream_.s),
        sampler_(SamplerShape{d_.B, d_.N, d_.Np, d_.K, d_.iqn}, stream_.s),
        params_(L_.total()), target_(L_.total()), adam_(2 * L_.total()),
        kept_params_(L_.total()), kept_target_(L_.total()), kept_adam_(2 * L_.total()),
        online_(d_), online_next_(d_), target_next_(d_),
        q_(static_cast<std::size_t>(d_.B) * d_.A), q_next_(q_.size()), astar_(static_cast<std::size_t>(d_.B) * d_.D),
        m_(static_cast<std::size_t>(d_.B) * d_.D * d_.NA), c51_(d_.B), lse_(static_cast<std::size_t>(d_.B) * d_.D),
        y_(lse_.size()), mse_part_(d_.B), cql_part_(d_.B), iqn_(d_),
        aux_pre_(static_cast<std::size_t>(d_.B) * d_.AH), aux_h_(aux_pre_.size()),
        pred_(static_cast<std::size_t>(d_.B) * d_.AO), aux_loss_(d_.B),
        ve_(static_cast<std::size_t>(d_.E) * d_.B * d_.NA), ens_part_(static_cast<std::size_t>(d_.E) * d_.B),
        total_(1), bw_(d_, L_.total()), bw33_(bw_.bw.size()), bw34_(bw_.bw.size()), norms_(1 + kGroupCount),
        clip_norms_(1 + kGroupCount), opt_(L_, c.optim, stream_.s), bank_(c.run.steps_per_fold, stream_.s),
        scalars_(kScCount), records_(static_cast<std::size_t>(c.run.steps_per_fold) * sizeof(StepStatusRecord)),
        adam_t_dev_(1), gstep_(1) {
    for (int s = 0; s < kSlotCount; ++s) shapes_[s] = slot_shape(d_, s, L_.total());
    const float* batch = sampler_.batch();
    s_ = batch;
    s_next_ = batch + static_cast<std::size_t>(d_.B) * d_.F;
    ret_ = batch + static_cast<std::size_t>(d_.B) * 2 * d_.F;
    done_ = ret_ + d_.B;
    next_bar_ = done_ + d_.B;
    fwd_ = ForwardState{s_, next_bar_, sampler_.actions(), online_.h1.get(), online_.pre1.get(),
                        online_.pre2.get(), online_.h2.get(), online_.z.get(), online_.logp.get(), q_.get(),
                        m_.get(), y_.get(), lse_.get(), ve_.get(), sampler_.tau(), iqn_.cos.get(),
                        iqn_.phi_pre.get(), iqn_.phi.get(), iqn_.psi.get(), iqn_.q.get(), iqn_.targets.get(),
                        aux_pre_.get(), aux_h_.get(), pred_.get()};
    const auto& l = c.loss;
    weights_ = LossWeights{static_cast<float>(l.lambda_mse), static_cast<float>(l.alpha_cql),
                           static_cast<float>(l.lambda_iqn), static_cast<float>(l.lambda_aux),
                           static_cast<float>(l.lambda_ens)};
    weights_d_ = LossWeightsD{l.lambda_mse, l.lambda_iqn, l.lambda_aux, l.lambda_ens, d_.iqn};
    device_name_ = probe_devices().name;
    // Every slot buffer and every piece of step state starts at zero, as on the CPU backend: a
    // buffer inspected before its first step shows zeros, never leftover device memory.
    for (int s = 0; s < kSlotCount; ++s) {
      // The buffers are what the slot table says they are (shapes are what the dumps store).
      for (const DevBuf b : {read_buf(s), write_buf(s)})
        if (b.n != element_count(shapes_[s]))
          throw InternalError(fmt::format("CUDA backend: slot {} has {} elements, its shape says {}", s, b.n,
                                          element_count(shapes_[s])));
      if (const DevBuf b = write_buf(s); b.p) zero(b.p, b.n * sizeof(float));
    }
    for (auto* a : {&bw33_, &bw34_, &clip_norms_, &kept_params_, &kept_target_, &kept_adam_})
      zero(a->get(), a->size() * sizeof(float));
    zero(scalars_.get(), scalars_.size() * sizeof(double));
    zero(records_.get(), records_.size());
    zero(kept_t_.get(), sizeof(std::int64_t));
    zero(gstep_.get(), sizeof(std::int64_t));
    reset_parameters();
  }

  // ---- Backend ----
  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_ + " (float32)"; }
  const Dims& dims() const override { return d_; }
  const ParamLayout& layout() const override { return L_; }

  void reset_parameters() override {
    const std::vector<double> init = initial_parameters(c_, L_);
    const std::vector<float> p(init.begin(), init.end());
    upload(params_.get(), p);
    upload(target_.get(), p);
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(adam_.get(), 0, adam_.size() * sizeof(float), stream_.s));
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(bw_.grads.get(), 0, bw_.grads.size() * sizeof(float), stream_.s));
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(adam_t_dev_.get(), 0, sizeof(std::int64_t), stream_.s));
  }

  void load_fold(const TransitionSet& t) override {
    sync();
    sampler_.load_fold(t);
    drop_graph();  // the fold's arrays (and the pool size the gather uses) changed
  }

  void run_phase(Phase phase, const StepKey& key) override {
    if (phase == Phase::Sample) set_step_keys(key);
    phase_body(phase);
  }

  ~CudaBackend() override {
    try {
      sync();
    } catch (...) {
    }
    drop_graph();
  }

 private:
  // One phase's work; the same function whether enqueued directly or captured into the graph.
  void phase_body(Phase phase) {
    switch (phase) {
      case Phase::Sample: sample(); break;
      case Phase::Forward: forward(); break;
      case Phase::BackwardMain:
        backward_main(blas_, d_, L_, params_.get(), fwd_, weights_, bw_, hook_);
        // Slot 33 keeps its own copy: the buffer it checks changes later in the step.
        copy(bw33_.get(), bw_.bw.get(), bw_.bw.size());
        check_site(kBwDHS2Main);
        break;
      case Phase::BackwardAux:
        backward_aux(blas_, d_, L_, params_.get(), fwd_, weights_, bw_, hook_);
        copy(bw34_.get(), bw_.bw.get(), bw_.bw.size());
        check_site(kBwDHS2Aux);
        break;
      case Phase::BackwardIqn:
        if (!d_.iqn) break;
        backward_iqn(blas_, d_, L_, params_.get(), fwd_, weights_, bw_, hook_);
        check_site(kBwDHS2Iqn);
        break;
      case Phase::BackwardEncoder: backward_encoder(blas_, d_, L_, params_.get(), fwd_, bw_); break;
      case Phase::ChecksPostBackward:
        for (int s = kDValueLogits; s <= kBnDConcat; ++s)
          if (!shapes_[s].empty()) check_site(s);
        break;
      case Phase::Optimizer: optimizer(); break;
    }
  }

  // What changes from step to step, written to device memory before the step's work.
  void set_step_keys(const StepKey& key) {
    sampler_.set_key(key.fold, key.step);
    set_global_step(gstep_.get(), key.global_step, stream_.s);
  }

  void drop_graph() {
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    graph_exec_ = nullptr;
  }

  void capture() {
    drop_graph();
    NANSCOPE_CUDA_CHECK(cudaStreamBeginCapture(stream_.s, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      for (int p = 0; p < kPhaseCount; ++p) phase_body(static_cast<Phase>(p));
    } catch (...) {
      cudaStreamEndCapture(stream_.s, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    NANSCOPE_CUDA_CHECK(cudaStreamEndCapture(stream_.s, &graph));
    const cudaError_t e = cudaGraphInstantiate(&graph_exec_, graph, 0);
    cudaGraphDestroy(graph);
    NANSCOPE_CUDA_CHECK(e);
    ++captures_;
  }

 public:
  void run_step_graphed(const StepKey& key, std::uint64_t checked) override {
    set_step_keys(key);
    if (!graph_exec_ || checked != captured_checked_) {
      capture();
      captured_checked_ = checked;
    }
    NANSCOPE_CUDA_CHECK(cudaGraphLaunch(graph_exec_, stream_.s));
  }
  int graph_captures() const override { return captures_; }

  SlotView slot(int index) override {
    SlotView v;
    if (shapes_[index].empty()) return v;
    auto& mirror = mirrors_[static_cast<std::size_t>(index)];
    const DevBuf b = read_buf(index);
    mirror.resize(b.n);
    download(mirror.data(), b.p, b.n);
    v.data = mirror.data();
    v.count = mirror.size();
    v.shape = shapes_[index];
    return v;
  }

  std::vector<Overwritten> inject_slot(int index, std::optional<std::size_t> element, double value) override {
    const DevBuf b = write_buf(index);
    float* p = b.p;
    const std::size_t n = b.n;
    if (!p || (element && *element >= n)) throw InternalError(fmt::format("inject_slot: slot {} element out of range", index));
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

  StepLosses losses() const override { return losses_; }
  void set_observer(SlotObserver* o) override { observer_ = o; }

  std::vector<double> read_param(const std::string& name, bool target) const override {
    const ParamEntry* e = entry(name);
    std::vector<float> h(e->count);
    download(h.data(), (target ? target_ : params_).get() + e->offset, e->count);
    return std::vector<double>(h.begin(), h.end());
  }
  void write_param(const std::string& name, const std::vector<double>& values) override {
    const ParamEntry* e = entry(name);
    if (values.size() != e->count)
      throw InternalError(fmt::format("parameter '{}' has {} elements, got {}", name, e->count, values.size()));
    upload(params_.get() + e->offset, std::vector<float>(values.begin(), values.end()));
  }
  std::int64_t adam_step() const override {
    std::int64_t t = 0;
    download(&t, adam_t_dev_.get(), 1);
    return t;
  }

  void read_state(StateSnapshot& s) const override { read_state_from(params_, target_, adam_, adam_step(), s); }
  void write_state(const StateSnapshot& s) override {
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
  void keep_state() override {  // device-to-device, graph-capturable
    copy(kept_params_.get(), params_.get(), params_.size());
    copy(kept_target_.get(), target_.get(), target_.size());
    copy(kept_adam_.get(), adam_.get(), adam_.size());
    NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(kept_t_.get(), adam_t_dev_.get(), sizeof(std::int64_t),
                                        cudaMemcpyDeviceToDevice, stream_.s));
  }
  void read_kept_state(StateSnapshot& s) const override {
    std::int64_t t = 0;
    download(&t, kept_t_.get(), 1);
    read_state_from(kept_params_, kept_target_, kept_adam_, t, s);
  }

  BatchContext batch_context() const override {
    auto buf = const_cast<DeviceSampler&>(sampler_).buffers();
    BatchArrays a;
    a.batch = download_d(buf.batch, sampler_.batch_count());
    a.actions.resize(static_cast<std::size_t>(d_.B) * d_.D);
    download(a.actions.data(), buf.actions, a.actions.size());
    if (d_.iqn) {
      a.tau = download_d(buf.tau, static_cast<std::size_t>(d_.B) * d_.N);
      a.tau_target = download_d(buf.tau_target, static_cast<std::size_t>(d_.B) * d_.Np);
      a.tau_greedy = download_d(buf.tau_greedy, static_cast<std::size_t>(d_.B) * d_.K);
    }
    return to_batch_context(d_, a);
  }
  void set_batch(const BatchContext& b) override {
    const BatchArrays a = from_batch_context(d_, b);
    auto buf = sampler_.buffers();
    auto up = [&](float* p, const std::vector<double>& v) { upload(p, std::vector<float>(v.begin(), v.end())); };
    up(buf.batch, a.batch);
    upload(buf.actions, a.actions);
    if (d_.iqn) {
      up(buf.tau, a.tau);
      up(buf.tau_target, a.tau_target);
      up(buf.tau_greedy, a.tau_greedy);
    }
  }
  DeviceSentinel* device_sentinel() override { return this; }

  // ---- DeviceSentinel ----
  void begin_fold() override { bank_.reset_fold(); }
  void begin_step(int step) override {
    bank_.begin_step(step);
    bank_step_ = step;
  }
  void check(int slot) override {
    const DevBuf b = read_buf(slot);
    bank_.check(slot, b.p, b.n);
  }
  std::uint32_t status_now() override {
    std::uint32_t s = 0;
    download(&s, bank_.status_word(), 1);
    return s;
  }
  StepReport end_step() override {
    StepStatusRecord h{};
    download(reinterpret_cast<unsigned char*>(&h), records_.get() + static_cast<std::size_t>(bank_step_) * sizeof h,
             sizeof h);
    losses_ = report_of(h).losses;
    return report_of(h);
  }
  StepDetail step_detail() override {
    const BankReadback r = bank_.readback_step();
    d2h_ += 3;
    return detail_of(r, 0, bank_step_);
  }
  std::vector<std::pair<StepReport, StepDetail>> read_steps(int first, int last) override {
    const std::size_t n = static_cast<std::size_t>(last - first + 1);
    std::vector<StepStatusRecord> recs(n);
    download(reinterpret_cast<unsigned char*>(recs.data()),
             records_.get() + static_cast<std::size_t>(first) * sizeof(StepStatusRecord), n * sizeof(StepStatusRecord));
    const BankReadback r = bank_.readback();  // records and history rows 0..last
    d2h_ += 3;
    std::vector<std::pair<StepReport, StepDetail>> out;
    for (int st = first; st <= last; ++st)
      out.emplace_back(report_of(recs[static_cast<std::size_t>(st - first)]), detail_of(r, st, st));
    if (!out.empty()) losses_ = out.back().first.losses;
    return out;
  }
  std::int64_t device_to_host_copies() const override { return d2h_; }

 private:
  // ---- The call sites ----
  void produced(int slot) {
    if (observer_) observer_->produced(slot);
  }
  void check_site(int slot) {
    if (observer_) observer_->check(slot);
  }
  // A slot's call site: injection right after the producer, then the check.
  void site(int slot) {
    produced(slot);
    check_site(slot);
  }

  StepReport report_of(const StepStatusRecord& h) const {
    StepReport r;
    r.status = h.status;
    StepLosses& l = r.losses;
    l.c51 = h.scalars[kScC51];
    l.mse = h.scalars[kScMse];
    l.cql = h.scalars[kScCql];
    l.iqn = d_.iqn ? h.scalars[kScIqn] : 0.0;
    l.aux = h.scalars[kScAux];
    l.ens = h.scalars[kScEns];
    l.total = h.total;
    l.grad_norm = h.grad_norm;
    for (int g = 0; g < kGroupCount; ++g) l.group_norm[static_cast<std::size_t>(g)] = h.group_norm[g];
    return r;
  }
  static StepDetail detail_of(const BankReadback& r, int row, int step) {
    StepDetail d;
    for (int s = 0; s < kSlotCount; ++s) {
      d.kinds[static_cast<std::size_t>(s)] = r.history[static_cast<std::size_t>(row)][static_cast<std::size_t>(s)];
      const auto& rec = r.records[static_cast<std::size_t>(s)];
      d.first_count[static_cast<std::size_t>(s)] = rec.first_step == step ? rec.count : -1;
    }
    return d;
  }

  void sample() {
    sampler_.draw(c_.run.seed);
    site(kBatch);
    if (d_.iqn) produced(kIqnTau);
  }

  void forward() {
    void* s = stream_.s;
    const bool kl = c_.loss.c51_form == "kl_unmasked";
    net_forward(blas_, d_, L_, params_.get(), s_, online_, [this](int slot) { site(slot); });
    // Targets (no gradient): double-DQN greedy sub-actions, the target distribution, its projection.
    net_forward(blas_, d_, L_, params_.get(), s_next_, online_next_);
    expected_q(d_, online_next_.logp.get(), q_next_.get(), s);
    greedy_actions(d_, q_next_.get(), astar_.get(), s);
    net_forward(blas_, d_, L_, target_.get(), s_next_, target_next_);
    site(kTargetLogProbs);
    c51_projection(d_, target_next_.logp.get(), astar_.get(), ret_, done_, m_.get(), s);
    site(kProjTarget);
    c51_loss(d_, kl, online_.logp.get(), m_.get(), sampler_.actions(), c51_.get(), s);
    produced(kC51Loss);
    mean_into(c51_.get(), d_.B, 1.0, scalars_.get() + kScC51, s);
    check_site(kC51Loss);
    expected_q(d_, online_.logp.get(), q_.get(), s);
    site(kQExpected);
    cql_mse_terms(d_, q_.get(), target_next_.logp.get(), astar_.get(), ret_, done_, sampler_.actions(), lse_.get(),
                  y_.get(), mse_part_.get(), cql_part_.get(), s);
    site(kCqlLse);
    mean_into(mse_part_.get(), d_.B, 1.0 / d_.D, scalars_.get() + kScMse, s);
    mean_into(cql_part_.get(), d_.B, c_.loss.alpha_cql, scalars_.get() + kScCql, s);
    if (d_.iqn) {
      check_site(kIqnTau);
      iqn_pass(blas_, d_, L_, params_.get(), online_.h2.get(), sampler_.tau(), d_.N, iqn_.cos, iqn_.phi_pre,
               iqn_.phi, iqn_.psi, iqn_.q);
      site(kIqnPhi);
      site(kIqnQuantiles);
      iqn_pass(blas_, d_, L_, params_.get(), online_next_.h2.get(), sampler_.tau_greedy(), d_.K, iqn_.g_cos,
               iqn_.g_phi_pre, iqn_.g_phi, iqn_.g_psi, iqn_.g_q);
      iqn_greedy(d_, iqn_.g_q.get(), iqn_.astar.get(), s);
      iqn_pass(blas_, d_, L_, target_.get(), target_next_.h2.get(), sampler_.tau_target(), d_.Np, iqn_.t_cos,
               iqn_.t_phi_pre, iqn_.t_phi, iqn_.t_psi, iqn_.t_q);
      site(kIqnTargetQuantiles);
      iqn_targets(d_, iqn_.t_q.get(), iqn_.astar.get(), ret_, done_, iqn_.targets.get(), s);
      iqn_loss(d_, iqn_.q.get(), sampler_.tau(), iqn_.targets.get(), sampler_.actions(), iqn_.loss.get(), s);
      produced(kIqnLoss);
      mean_into(iqn_.loss.get(), d_.B, 1.0, scalars_.get() + kScIqn, s);
      check_site(kIqnLoss);
    }
    aux_head(blas_, d_, L_, params_.get(), online_.h2.get(), aux_pre_.get(), aux_h_.get(), pred_.get());
    site(kAuxPredNb);
    aux_loss(d_, pred_.get(), next_bar_, aux_loss_.get(), s);
    produced(kAuxLoss);
    mean_into(aux_loss_.get(), d_.B, 1.0, scalars_.get() + kScAux, s);
    check_site(kAuxLoss);
    ensemble_heads(blas_, d_, L_, params_.get(), online_.z.get(), ve_.get());
    site(kEnsembleLogits);
    ensemble_ce(d_, ve_.get(), m_.get(), ens_part_.get(), s);
    mean_into(ens_part_.get(), d_.E * d_.B, 1.0 / d_.D, scalars_.get() + kScEns, s);
    total_loss(scalars_.get(), weights_d_, total_.get(), s);
    site(kTotalLoss);
  }

  void optimizer() {
    opt_.grad_norms(bw_.grads.get(), norms_.get());
    // Clipping uses the norm as computed, as the CPU backend does (an injection into the slot is
    // seen by the checks and the collapse halt, not by the clip).
    copy(clip_norms_.get(), norms_.get(), norms_.size());
    site(kGradNorm);
    // The observer keeps the state before the update (for dumps); the guard is decided on the
    // device from the step's status word, so parameters, moments and t stay untouched there.
    if (observer_) observer_->allow_update();
    opt_.adam_step(bw_.grads.get(), params_.get(), adam_.get(), clip_norms_.get(), adam_t_dev_.get(),
                   c_.guard.enabled ? bank_.status_word() : nullptr);
    site(kAdamMoments);
    site(kParams);
    sync_target_if_due(gstep_.get(), c_.optim.target_sync, params_.get(), target_.get(), params_.size(), stream_.s);
    pack_step_record(bank_.status_word(), scalars_.get(), total_.get(), clip_norms_.get(), norms_.get(),
                     bank_.step_word(), reinterpret_cast<StepStatusRecord*>(records_.get()), stream_.s);
  }

  // ---- Slot buffers ----
  // A slot's device buffer, its length taken from the buffer object itself.
  struct DevBuf {
    float* p = nullptr;
    std::size_t n = 0;
  };
  static DevBuf of(DeviceArray<float>& a) { return DevBuf{a.get(), a.size()}; }
  // Where a slot's check reads (and slot() shows): 33 and 34 read their own copies.
  DevBuf read_buf(int slot) {
    if (slot == kBwDHS2Main) return of(bw33_);
    if (slot == kBwDHS2Aux) return of(bw34_);
    return write_buf(slot);
  }
  // Where an injection writes: the live buffer the next consumer reads.
  DevBuf write_buf(int slot) {
    if (shapes_[slot].empty()) return {};
    auto buf = sampler_.buffers();
    switch (slot) {
      case kBatch: return DevBuf{buf.batch, buf.batch_count};
      case kHS1: return of(online_.h1);
      case kHS2: return of(online_.h2);
      case kBnZ: return of(online_.z);
      case kValueLogits: return of(online_.v);
      case kAdvLogits: return of(online_.adv);
      case kLogProbs: return of(online_.logp);
      case kTargetLogProbs: return of(target_next_.logp);
      case kProjTarget: return of(m_);
      case kC51Loss: return of(c51_);
      case kQExpected: return of(q_);
      case kCqlLse: return of(lse_);
      case kIqnTau: return DevBuf{buf.tau, buf.tau_count};
      case kIqnPhi: return of(iqn_.phi);
      case kIqnQuantiles: return of(iqn_.q);
      case kIqnTargetQuantiles: return of(iqn_.t_q);
      case kIqnLoss: return of(iqn_.loss);
      case kAuxPredNb: return of(pred_);
      case kAuxLoss: return of(aux_loss_);
      case kEnsembleLogits: return of(ve_);
      case kTotalLoss: return of(total_);
      case kGradNorm: return of(norms_);
      case kAdamMoments: return of(adam_);
      case kParams: return of(params_);
      case kDValueLogits: return of(bw_.d_value);
      case kDAdvLogits: return of(bw_.d_adv);
      case kIqnTrunkM: return of(bw_.trunk_m);
      case kIqnDHS2: return of(bw_.iqn_dh);
      case kDBranchLogits: return of(bw_.iqn_dq);
      case kCqlDValueLogits: return of(bw_.cql_dv);
      case kAuxDHS2Nb: return of(bw_.aux_dh);
      case kEnsembleDLogits: return of(bw_.d_ve);
      case kBnDConcat: return of(bw_.dz);
      default: return of(bw_.bw);  // 33, 34, 35: bw_d_h_s2
    }
  }

  // ---- Transfers (stream-ordered; every device-to-host copy is counted) ----
  void sync() const { NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_.s)); }
  template <class T>
  void download(T* host, const T* dev, std::size_t n) const {
    NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(host, dev, n * sizeof(T), cudaMemcpyDeviceToHost, stream_.s));
    sync();
    ++d2h_;
  }
  std::vector<double> download_d(const float* dev, std::size_t n) const {
    std::vector<float> h(n);
    download(h.data(), dev, n);
    return std::vector<double>(h.begin(), h.end());
  }
  template <class T>
  void upload(T* dev, const std::vector<T>& host) {
    NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream_.s));
    sync();  // the host vector may go away
  }
  void zero(void* p, std::size_t bytes) { NANSCOPE_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_.s)); }
  void copy(float* dst, const float* src, std::size_t n) {
    NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_.s));
  }
  void read_state_from(const DeviceArray<float>& p, const DeviceArray<float>& t, const DeviceArray<float>& a,
                       std::int64_t adam_t, StateSnapshot& s) const {
    std::vector<float> hp(p.size()), ht(t.size()), ha(a.size());
    download(hp.data(), p.get(), hp.size());
    download(ht.data(), t.get(), ht.size());
    download(ha.data(), a.get(), ha.size());
    pack_state(L_, hp, ht, ha, adam_t, s);
  }
  const ParamEntry* entry(const std::string& name) const {
    const ParamEntry* e = L_.find(name);
    if (!e) throw UsageError(fmt::format("unknown parameter '{}'", name));
    return e;
  }

  Config c_;
  Dims d_;
  ParamLayout L_;
  Stream stream_;
  Blas blas_;
  DeviceSampler sampler_;
  DeviceArray<float> params_, target_, adam_, kept_params_, kept_target_, kept_adam_;
  DeviceArray<std::int64_t> kept_t_{1};
  NetBuffers online_, online_next_, target_next_;
  DeviceArray<float> q_, q_next_;
  DeviceArray<std::int32_t> astar_;
  DeviceArray<float> m_, c51_, lse_, y_, mse_part_, cql_part_;
  IqnBuffers iqn_;
  DeviceArray<float> aux_pre_, aux_h_, pred_, aux_loss_, ve_, ens_part_, total_;
  BackwardBuffers bw_;
  DeviceArray<float> bw33_, bw34_, norms_, clip_norms_;
  DeviceOptimizer opt_;
  DeviceBank bank_;
  DeviceArray<double> scalars_;
  DeviceArray<unsigned char> records_;     // a StepStatusRecord per step of the fold
  DeviceArray<std::int64_t> adam_t_dev_;   // Adam's t
  DeviceArray<std::int64_t> gstep_;        // the global step (target sync)
  cudaGraphExec_t graph_exec_ = nullptr;
  std::uint64_t captured_checked_ = 0;
  int captures_ = 0;
  const float *s_ = nullptr, *s_next_ = nullptr, *ret_ = nullptr, *done_ = nullptr, *next_bar_ = nullptr;
  ForwardState fwd_{};
  LossWeights weights_{};
  LossWeightsD weights_d_{};
  SlotHook hook_ = [this](int slot) { produced(slot); };
  std::array<std::vector<std::int64_t>, kSlotCount> shapes_;
  std::array<std::vector<float>, kSlotCount> mirrors_;
  SlotObserver* observer_ = nullptr;
  StepLosses losses_;
  std::string device_name_;
  int bank_step_ = 0;  // the step the device bank records into
  mutable std::int64_t d2h_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const Config& config) {
  if (config.model.precision != "float32")
    throw ConfigError(fmt::format("config: key 'model.precision': the CUDA backend computes in float32, "
                                  "not {} (use --backend cpu for float64)", config.model.precision));
  const DeviceProbe probe = probe_devices();
  if (probe.count == 0) throw DeviceError("no usable CUDA device: " + probe.error);
  return std::make_unique<CudaBackend>(config);
}

}  // namespace nanscope::cuda
