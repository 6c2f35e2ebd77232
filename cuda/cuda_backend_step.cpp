// CudaBackend: the step. Each phase's work with the CPU backend's slot call sites in the same
// order, and the whole step as one CUDA graph captured from the very same phase functions.
#include "cuda_backend_impl.h"
#include "graph_shape.h"

namespace nanscope::cuda {

void CudaBackend::run_phase(Phase phase, const StepKey& key) {
  if (phase == Phase::Sample) set_step_keys(key);
  phase_body(phase);
}

void CudaBackend::phase_body(Phase phase) {
  const NvtxRange range(phase_name(phase).data());  // the names are literals: null-terminated
  switch (phase) {
    case Phase::Sample:
      sample();
      break;
    case Phase::Forward:
      forward();
      break;
    case Phase::BackwardMain:
      backward_begin(bw_, stream_.s);
      bw_start_ = lanes_.mark();
      backward_main(lanes_, d_, L_, params_.get(), fwd_, weights_, bw_, hook_);
      // Slot 33 keeps its own copy: the buffer it checks changes later in the step.
      copy(bw33_.get(), bw_.bw.get(), bw_.bw.size());
      check_site(kBwDHS2Main);
      break;
    case Phase::BackwardAux:
      backward_aux(lanes_, bw_start_, d_, L_, params_.get(), fwd_, weights_, bw_, hook_);
      copy(bw34_.get(), bw_.bw.get(), bw_.bw.size());
      check_site(kBwDHS2Aux);
      break;
    case Phase::BackwardIqn:
      if (!d_.iqn) break;
      backward_iqn(lanes_, bw_start_, d_, L_, params_.get(), fwd_, weights_, bw_, hook_);
      check_site(kBwDHS2Iqn);
      break;
    case Phase::BackwardEncoder:
      bw_heads_done_ = lanes_.mark();
      backward_encoder(lanes_, d_, L_, params_.get(), fwd_, bw_);
      break;
    case Phase::ChecksPostBackward:
      for (int s = kDValueLogits; s <= kBnDConcat; ++s)
        if (!shapes_[s].empty()) check_site(s);
      // With the guard on, the update waits for them: they run beside the encoder backward (which
      // writes none of 24-35). Without it nothing reads them before the update: they go with the
      // update's own slots after it (one launch fewer).
      if (c_.guard.enabled) flush_checks_beside(bw_heads_done_);
      break;
    case Phase::Optimizer:
      optimizer();
      break;
  }
}

void CudaBackend::set_step_keys(const StepKey& key) {
  sampler_.set_key(key.fold, key.step);
  set_global_step(gstep_.get(), key.global_step, stream_.s);
}

void CudaBackend::drop_graph() {
  graph_exec_.reset();
}

void CudaBackend::capture() {
  drop_graph();
  lanes_.prepare();
  NANSCOPE_CUDA_CHECK(cudaStreamBeginCapture(stream_.s, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  // Launches are recorded, not run: no debug synchronisation meanwhile. The step's independent
  // branches go to the side lanes (the graph's parallel branches).
  struct Capturing {
    Lanes& lanes;
    explicit Capturing(Lanes& l) : lanes(l) {
      capturing_graph = true;
      lanes.set_parallel(step_lanes_on());
    }
    ~Capturing() {
      lanes.set_parallel(false);
      capturing_graph = false;
    }
  };
  lanes_.reset_tally();
  try {
    const Capturing capturing(lanes_);
    for (int p = 0; p < kPhaseCount; ++p) phase_body(static_cast<Phase>(p));
    lanes_.join_all();  // nothing is left on a side lane: the capture ends joined
  } catch (...) {
    pending_checks_.clear();
    pending_measures_.clear();
    late_captures_.clear();
    in_producer_ = 0;
    reserved_exec_.fill(-1);
    cudaStreamEndCapture(stream_.s, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  NANSCOPE_CUDA_CHECK(cudaStreamEndCapture(stream_.s, &graph));
  struct GraphOwner {  // the captured graph, freed once instantiated (or not)
    cudaGraph_t g;
    ~GraphOwner() { cudaGraphDestroy(g); }
  } owner{graph};
  graph_shape_ = shape_of(graph);
  graph_shape_.one_stream = !step_lanes_on();
  graph_shape_.gemms = lanes_.tally();
  graph_exec_.instantiate(graph);
  ++captures_;
}

// With the step graph on, the step is one graph launch: captured when there is none yet (the fold's
// data and the capture's work are part of it) or when the checked slots differ from the captured
// set; during a capture the observer sees exactly the calls of an ungraphed step, a replay makes
// none. A step whose observer writes from the host between two kernels runs phase by phase.
void CudaBackend::run_step(const StepKey& key) {
  if (!graph_on_ || (observer_ && observer_->writes_this_step())) {
    Backend::run_step(key);
    return;
  }
  set_step_keys(key);
  const std::uint64_t checked = setup_.checked_mask();
  if (!graph_exec_ || checked != captured_checked_) {
    capture();
    captured_checked_ = checked;
  }
  NANSCOPE_CUDA_CHECK(cudaGraphLaunch(graph_exec_.get(), stream_.s));
}

void CudaBackend::sample() {
  sampler_.draw(c_.run.seed);
  site(kBatch);
  if (d_.iqn) produced(kIqnTau);
}

namespace {
// The forward's lanes (stream_lanes.h): the three networks side by side, the IQN head's three
// passes each beside its network, the aux and ensemble heads beside the C51 losses.
constexpr int kMainLane = 0, kNextLane = 1, kTargetLane = 2, kIqnLane = 3, kAuxLane = 4,
              kEnsLane = 5;
}  // namespace

void CudaBackend::forward() {
  cudaStream_t s = stream_.s;
  const bool kl = c_.loss.c51_form == C51Form::KlUnmasked;
  const Lanes::Mark start = lanes_.mark();
  net_forward(blas_, d_, L_, params_.get(), s_, online_, [this](int slot) { site(slot); });
  const Lanes::Mark online = lanes_.mark();
  // Targets (no gradient): double-DQN greedy sub-actions, the target distribution, its projection.
  lanes_.wait(kNextLane, start);
  Blas& next = lanes_.blas(kNextLane);
  net_forward(next, d_, L_, params_.get(), s_next_, online_next_);
  expected_q(d_, online_next_.logp.get(), q_next_.get(), next.stream());
  greedy_actions(d_, q_next_.get(), astar_.get(), next.stream());
  lanes_.wait(kTargetLane, start);
  Blas& target = lanes_.blas(kTargetLane);
  net_forward(target, d_, L_, target_.get(), s_next_, target_next_);
  site(kTargetLogProbs);
  lanes_.after(kMainLane, kNextLane);
  lanes_.after(kMainLane, kTargetLane);
  c51_projection(d_, target_next_.logp.get(), astar_.get(), ret_, done_, m_.get(), s);
  site(kProjTarget);
  const Lanes::Mark projection = lanes_.mark();
  c51_loss(d_, kl, online_.logp.get(), m_.get(), sampler_.actions(), c51_.get(), s);
  produced(kC51Loss);
  mean_into(c51_.get(), d_.B, 1.0, scalars_.get() + kScC51, s);
  check_site(kC51Loss);
  expected_q(d_, online_.logp.get(), q_.get(), s);
  site(kQExpected);
  mse_lse_terms(d_, q_.get(), target_next_.logp.get(), astar_.get(), ret_, done_,
                sampler_.actions(), lse_.get(), y_.get(), mse_part_.get(), s);
  mean_into(mse_part_.get(), d_.B, 1.0 / d_.D, scalars_.get() + kScMse, s);
  produced(kCqlLse);
  cql_mean(d_, q_.get(), lse_.get(), sampler_.actions(), c_.loss.alpha_cql, scalars_.get() + kScCql,
           s);
  check_site(kCqlLse);
  if (d_.iqn) {
    check_site(kIqnTau);
    lanes_.wait(kIqnLane, start);
    Blas& iqn = lanes_.blas(kIqnLane);
    iqn_embedding(iqn, d_, L_, params_.get(), sampler_.tau(), d_.B * d_.N, iqn_.cos, iqn_.phi_pre,
                  iqn_.phi, producer_sink(kIqnPhi));
    site(kIqnPhi);
    lanes_.wait(kIqnLane, online);
    iqn_quantile_layer(iqn, d_, L_, params_.get(), online_.h2.get(), d_.N, iqn_.phi, iqn_.psi,
                       iqn_.q);
    site(kIqnQuantiles);
    iqn_pass(next, d_, L_, params_.get(), online_next_.h2.get(), sampler_.tau_greedy(), d_.K,
             iqn_.g_cos, iqn_.g_work, iqn_.g_q);
    iqn_greedy(d_, iqn_.g_q.get(), iqn_.astar.get(), next.stream());
    iqn_pass(target, d_, L_, target_.get(), target_next_.h2.get(), sampler_.tau_target(), d_.Np,
             iqn_.t_cos, iqn_.t_work, iqn_.t_q);
    site(kIqnTargetQuantiles);
    lanes_.after(kTargetLane, kNextLane);
    iqn_targets(d_, iqn_.t_q.get(), iqn_.astar.get(), ret_, done_, iqn_.targets.get(),
                target.stream());
    lanes_.after(kTargetLane, kIqnLane);
    iqn_loss(d_, iqn_.q.get(), sampler_.tau(), iqn_.targets.get(), sampler_.actions(),
             iqn_.loss.get(), target.stream());
    produced(kIqnLoss);
    mean_into(iqn_.loss.get(), d_.B, 1.0, scalars_.get() + kScIqn, target.stream());
    check_site(kIqnLoss);
  }
  lanes_.wait(kAuxLane, online);
  Blas& aux = lanes_.blas(kAuxLane);
  aux_head(aux, d_, L_, params_.get(), online_.h2.get(), aux_pre_.get(), aux_h_.get(), pred_.get());
  site(kAuxPredNb);
  aux_loss(d_, pred_.get(), next_bar_, aux_loss_.get(), aux.stream());
  produced(kAuxLoss);
  mean_into(aux_loss_.get(), d_.B, 1.0, scalars_.get() + kScAux, aux.stream());
  check_site(kAuxLoss);
  lanes_.wait(kEnsLane, online);
  Blas& ens = lanes_.blas(kEnsLane);
  ensemble_heads(ens, d_, L_, params_.get(), online_.z.get(), ve_.get());
  site(kEnsembleLogits);
  lanes_.wait(kEnsLane, projection);
  ensemble_ce(d_, ve_.get(), m_.get(), ens_part_.get(), ens.stream());
  mean_into(ens_part_.get(), d_.E * d_.B, 1.0 / d_.D, scalars_.get() + kScEns, ens.stream());
  lanes_.join_all();
  total_loss(scalars_.get(), weights_d_, total_.get(), s);
  site(kTotalLoss);
  flush_checks_beside();  // the backward writes no forward slot: their checks run beside it
}

void CudaBackend::optimizer() {
  lanes_.join_all_but(kCheckLane);  // every parameter gradient, from whichever lane made it
  opt_.grad_norms(bw_.grads.get(), norms_.get());
  // The clip reads the slot after its call site, as the CPU backend does: an injection into the
  // norms reaches the update.
  site(kGradNorm);
  // With the guard on, the update waits for every check before it (it reads their status word),
  // except slot 21's, which goes with the update's own slots after it (nothing writes the norms
  // there): the guard reads the norms itself, so no launch stands between them and the update.
  // Without the guard, every check not already run beside the step waits for after the update.
  std::vector<DeviceBank::GroupItem> norm_check;
  if (c_.guard.enabled) {
    for (auto it = pending_checks_.begin(); it != pending_checks_.end(); ++it)
      if (it->slot == kGradNorm) {
        norm_check.push_back(*it);
        pending_checks_.erase(it);
        break;
      }
    flush_checks();
  }
  // The checks beside the step: before the update when the guard reads them, else before the
  // step's record and first-fire capture read the bank (below).
  if (c_.guard.enabled) lanes_.join(kCheckLane);
  reserve_site(kAdamMoments);  // the sites' positions in their order, though Adam checks both
  reserve_site(kParams);
  const AdamChecks checks{producer_sink(kAdamMoments), producer_sink(kParams)};
  AdamGuard guard;
  guard.updated = updated_.get();
  if (c_.guard.enabled) {
    guard.status = bank_.status_word();
    if (!norm_check.empty()) guard.norms = norms_.get();
  }
  opt_.adam_step(bw_.grads.get(), params_.get(), adam_.get(), norms_.get(), adam_t_dev_.get(),
                 guard, optimizer_shadow(), checks, delta_.get());
  pending_checks_.insert(pending_checks_.begin(), norm_check.begin(), norm_check.end());
  StepHealthIn health{bank_.health(), bank_.step_health()};
  if (delta_.get()) {
    opt_.norms_of(delta_.get(), update_norms_.get());
    opt_.norms_of(params_.get(), weight_norms_.get());
    health.update_norms = update_norms_.get();
    health.weight_norms = weight_norms_.get();
  }
  site(kAdamMoments);
  site(kParams);
  flush_checks();  // 21, 22 and 23 (unless their producer took them), without the guard the rest
  lanes_.join(kCheckLane);
  bank_.copy_first_fires(late_captures_);  // the slots checked by their producers, with capture on
  late_captures_.clear();
  capture_context();  // before the target sync: the target as the step used it
  // The target sync beside the step record (which reads neither network).
  lanes_.wait(kNextLane, lanes_.mark());
  sync_target_if_due(gstep_.get(), c_.optim.target_sync, params_.get(), target_.get(),
                     params_.size(), lanes_.stream(kNextLane));
  pack_step_record(bank_.status_word(), updated_.get(), scalars_.get(), total_.get(), norms_.get(),
                   bank_.step_word(), reinterpret_cast<StepStatusRecord*>(records_.get()), health,
                   stream_.s);
}

}  // namespace nanscope::cuda
