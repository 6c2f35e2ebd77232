// CudaBackend: the step. Each phase's work with the CPU backend's slot call sites in the same
// order, and the whole step as one CUDA graph captured from the very same phase functions.
#include "cuda_backend_impl.h"
#include "graph_profile.h"
#include "graph_shape.h"
#include "step_lane_map.h"

namespace nanscope::cuda {

namespace {
// The forward's lanes (step_lane_map.h).
constexpr int kMainLane = step_lane::kMain, kNextLane = step_lane::kNext,
              kTargetLane = step_lane::kTarget, kIqnLane = step_lane::kIqn,
              kAuxLane = step_lane::kAux, kEnsLane = step_lane::kEns,
              kGreedyEmbeddingLane = step_lane::kGreedyEmbedding,
              kTargetEmbeddingLane = step_lane::kTargetEmbedding;
}  // namespace

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
      marks_.bw_start = lanes_.mark();
      backward_main(lanes_, d_, L_, state_.params.get(), fwd_, loss_weights_.f, bw_, hook_,
                    lanes_.parallel());
      // Slot 33 keeps its own copy: the buffer it checks changes later in the step. (Made by
      // trunk_gradient in a captured step, as 34's copy.)
      if (!lanes_.parallel()) copy(bw_copies_.main.get(), bw_.bw.get(), bw_.bw.size());
      check_site(kBwDHS2Main);
      break;
    case Phase::BackwardAux:
      backward_aux(lanes_, marks_.bw_start, d_, L_, state_.params.get(), fwd_, loss_weights_.f, bw_,
                   hook_);
      if (!lanes_.parallel()) copy(bw_copies_.aux.get(), bw_.bw.get(), bw_.bw.size());
      check_site(kBwDHS2Aux);
      break;
    case Phase::BackwardIqn:
      if (!d_.iqn) break;
      backward_iqn(lanes_, marks_.bw_start, d_, L_, state_.params.get(), fwd_, loss_weights_.f, bw_,
                   hook_);
      check_site(kBwDHS2Iqn);
      break;
    case Phase::BackwardEncoder:
      if (lanes_.parallel())
        trunk_gradient(lanes_.blas(kMainLane), d_, L_, state_.params.get(), loss_weights_.f, bw_,
                       bw_copies_.main.get(), bw_copies_.aux.get(), fwd_.pre2);
      marks_.heads_done = lanes_.mark();
      backward_encoder(lanes_, d_, L_, state_.params.get(), fwd_, bw_);
      break;
    case Phase::ChecksPostBackward:
      for (int s = kDValueLogits; s <= kBnDConcat; ++s)
        if (!slots_.shapes[s].empty()) check_site(s);
      // With the guard on, the update waits for them: they run beside the encoder backward (which
      // writes none of 24-35). Without it nothing reads them before the update: they go with the
      // update's own slots after it (one launch fewer).
      if (c_.guard.enabled) flush_checks_beside(marks_.heads_done);
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
  graph_.exec.reset();
}

cudaGraph_t CudaBackend::record_step_graph() {
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
    checks_.drop_due();
    cudaStreamEndCapture(stream_.s, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  NANSCOPE_CUDA_CHECK(cudaStreamEndCapture(stream_.s, &graph));
  return graph;
}

void CudaBackend::capture() {
  cudaGraph_t graph = record_step_graph();
  struct GraphOwner {  // the captured graph, freed once instantiated (or not)
    cudaGraph_t g;
    ~GraphOwner() { cudaGraphDestroy(g); }
  } owner{graph};
  graph_.shape = shape_of(graph);
  graph_.shape.one_stream = !step_lanes_on();
  graph_.shape.gemms = lanes_.tally();
  graph_.exec.instantiate(graph);
  ++graph_.captures;
}

StepGraphProfile CudaBackend::profile_graph(int replays) {
  return cuda::profile_graph(record_step_graph(), stream_.s, replays);
}

// With the step graph on, the step is one graph launch: captured when there is none yet (the fold's
// data and the capture's work are part of it) or when the checked slots differ from the captured
// set; during a capture the observer sees exactly the calls of an ungraphed step, a replay makes
// none. A step whose observer writes from the host between two kernels runs phase by phase.
void CudaBackend::run_step(const StepKey& key) {
  if (!graph_.on || (observer_ && observer_->writes_this_step())) {
    Backend::run_step(key);
    return;
  }
  set_step_keys(key);
  const SlotSet checked = checks_.setup().checked_set();
  if (!graph_.exec || checked != graph_.checked) {
    capture();
    graph_.checked = checked;
  }
  NANSCOPE_CUDA_CHECK(cudaGraphLaunch(graph_.exec.get(), stream_.s));
}

void CudaBackend::sample() {
  sampler_.draw(c_.run.seed);
  site(kBatch);
  if (d_.iqn) produced(kIqnTau);
}

void CudaBackend::forward() {
  cudaStream_t s = stream_.s;
  const bool kl = c_.loss.c51_form == C51Form::KlUnmasked;
  const Lanes::Mark start = lanes_.mark();
  // The backward's gradients zeroed beside the forward (which reads none of them); the aux head's
  // lane joins before the backward.
  lanes_.wait(kAuxLane, start);
  backward_clear(d_, bw_, lanes_.stream(kAuxLane));
  marks_.cleared = lanes_.mark(kAuxLane);
  // The IQN greedy and target passes' embeddings read tau and the parameters alone: from the
  // start, each on a lane of its own, so that only what needs h2 follows the networks.
  Lanes::Mark greedy_embedded, target_embedded;
  if (d_.iqn) {
    lanes_.wait(kGreedyEmbeddingLane, start);
    iqn_pass_embedding(lanes_.blas(kGreedyEmbeddingLane), d_, L_, state_.params.get(),
                       sampler_.tau_greedy(), d_.K, iqn_.g_cos, iqn_.g_work);
    greedy_embedded = lanes_.mark(kGreedyEmbeddingLane);
    lanes_.wait(kTargetEmbeddingLane, start);
    iqn_pass_embedding(lanes_.blas(kTargetEmbeddingLane), d_, L_, state_.target.get(),
                       sampler_.tau_target(), d_.Np, iqn_.t_cos, iqn_.t_work);
    target_embedded = lanes_.mark(kTargetEmbeddingLane);
  }
  net_forward(blas_, d_, L_, state_.params.get(), batch_.s, nets_.online,
              [this](int slot) { site(slot); });
  const Lanes::Mark online = lanes_.mark();
  // Captured: the online network's expected Q beside the targets and the C51 loss (it reads the
  // network's log-probabilities alone), on a lane idle after its embedding.
  const bool q_beside = lanes_.parallel();
  if (q_beside) {
    lanes_.wait(kTargetEmbeddingLane, online);
    expected_q(d_, nets_.online.logp.get(), heads_.q.get(), lanes_.stream(kTargetEmbeddingLane));
  }
  // Targets (no gradient): double-DQN greedy sub-actions, the target distribution, its projection.
  lanes_.wait(kNextLane, start);
  Blas& next = lanes_.blas(kNextLane);
  net_forward(next, d_, L_, state_.params.get(), batch_.s_next, nets_.online_next);
  expected_q_greedy(d_, nets_.online_next.logp.get(), heads_.q_next.get(), heads_.astar.get(),
                    next.stream());
  lanes_.wait(kTargetLane, start);
  Blas& target = lanes_.blas(kTargetLane);
  net_forward(target, d_, L_, state_.target.get(), batch_.s_next, nets_.target_next);
  site(kTargetLogProbs);
  lanes_.after(kMainLane, kNextLane);
  lanes_.after(kMainLane, kTargetLane);
  const Lanes::Mark targets = lanes_.mark();  // the greedy sub-actions, the target network
  c51_projection(d_, nets_.target_next.logp.get(), heads_.astar.get(), batch_.ret, batch_.done,
                 heads_.m.get(), s);
  site(kProjTarget);
  const Lanes::Mark projection = lanes_.mark();
  // The C51 loss and the losses' means feed the total alone: on the check lane (idle until the
  // forward's checks), off the chain that goes on to the backward.
  lanes_.wait(kCheckLane, projection);
  Blas& means = lanes_.blas(kCheckLane);
  c51_loss(d_, kl, nets_.online.logp.get(), heads_.m.get(), sampler_.actions(), heads_.c51.get(),
           means.stream());
  produced(kC51Loss);
  mean_into(heads_.c51.get(), d_.B, 1.0, scalars_.get() + kScC51, means.stream());
  check_site(kC51Loss);
  // The MSE and CQL terms read Q and the targets, not the projection: captured, beside it on the
  // lane of the CQL gradient, which follows them there.
  lanes_.wait(kGreedyEmbeddingLane, targets);
  Blas& terms = lanes_.blas(kGreedyEmbeddingLane);
  if (q_beside)
    lanes_.after(kGreedyEmbeddingLane, kTargetEmbeddingLane);
  else
    expected_q(d_, nets_.online.logp.get(), heads_.q.get(), s);
  site(kQExpected);
  mse_lse_terms(d_, heads_.q.get(), nets_.target_next.logp.get(), heads_.astar.get(), batch_.ret,
                batch_.done, sampler_.actions(), heads_.lse.get(), heads_.y.get(),
                heads_.mse_part.get(), terms.stream());
  marks_.mse_terms = lanes_.mark(kGreedyEmbeddingLane);
  lanes_.wait(kCheckLane, marks_.mse_terms);
  mean_into(heads_.mse_part.get(), d_.B, 1.0 / d_.D, scalars_.get() + kScMse, means.stream());
  produced(kCqlLse);
  cql_mean(d_, heads_.q.get(), heads_.lse.get(), sampler_.actions(), c_.loss.alpha_cql,
           scalars_.get() + kScCql, means.stream());
  check_site(kCqlLse);
  if (lanes_.parallel()) {  // captured: the backward's CQL gradient now, after its terms
    cql_gradient(d_, loss_weights_.f, fwd_.logp, fwd_.q, fwd_.cql_lse, fwd_.actions, bw_,
                 terms.stream());
  }
  if (d_.iqn) {
    check_site(kIqnTau);
    lanes_.wait(kIqnLane, start);
    Blas& iqn = lanes_.blas(kIqnLane);
    iqn_cos_features(d_, sampler_.tau(), d_.B * d_.N, iqn_.cos, iqn.stream());
    site(kIqnCosFeatures);
    iqn_phi_layer(iqn, d_, L_, state_.params.get(), d_.B * d_.N, iqn_.cos, iqn_.phi_pre, iqn_.phi,
                  checks_.producer_sink(kIqnPhi));
    site(kIqnPhi);
    lanes_.wait(kIqnLane, online);
    iqn_quantile_layer(iqn, d_, L_, state_.params.get(), nets_.online.h2.get(), d_.N, iqn_.phi,
                       iqn_.psi, iqn_.q);
    site(kIqnQuantiles);
    lanes_.wait(kNextLane, greedy_embedded);
    iqn_pass_quantiles(next, d_, L_, state_.params.get(), nets_.online_next.h2.get(), d_.K,
                       iqn_.g_work, iqn_.g_q, false);  // iqn_greedy_targets adds the bias
    lanes_.wait(kTargetLane, target_embedded);
    iqn_pass_quantiles(target, d_, L_, state_.target.get(), nets_.target_next.h2.get(), d_.Np,
                       iqn_.t_work, iqn_.t_q);
    site(kIqnTargetQuantiles);
    lanes_.after(kTargetLane, kNextLane);
    const float* g_bias = state_.params.get() + L_[kIqnOutB].offset;
    if (lanes_.parallel()) {  // captured: the targets, the loss and its mean in one launch
      lanes_.after(kTargetLane, kIqnLane);
      iqn_tail(d_, iqn_, g_bias, batch_.ret, batch_.done, sampler_.tau(), sampler_.actions(),
               scalars_.get() + kScIqn, target.stream());
      produced(kIqnLoss);
    } else {
      iqn_greedy_targets(d_, iqn_.g_q.get(), g_bias, iqn_.t_q.get(), batch_.ret, batch_.done,
                         iqn_.targets.get(), target.stream());
      lanes_.after(kTargetLane, kIqnLane);
      iqn_loss(d_, iqn_.q.get(), sampler_.tau(), iqn_.targets.get(), sampler_.actions(),
               iqn_.loss.get(), target.stream());
      produced(kIqnLoss);  // an injection into the losses reaches their mean
      mean_into(iqn_.loss.get(), d_.B, 1.0, scalars_.get() + kScIqn, target.stream());
    }
    check_site(kIqnLoss);
  }
  lanes_.wait(kAuxLane, online);
  Blas& aux = lanes_.blas(kAuxLane);  // after the backward's clear, at the forward's start
  aux_head(aux, d_, L_, state_.params.get(), nets_.online.h2.get(), heads_.aux_pre.get(),
           heads_.aux_h.get(), heads_.pred.get());
  site(kAuxPredNb);
  aux_loss(d_, heads_.pred.get(), batch_.next_bar, heads_.aux_loss.get(), aux.stream());
  produced(kAuxLoss);
  mean_into(heads_.aux_loss.get(), d_.B, 1.0, scalars_.get() + kScAux, aux.stream());
  check_site(kAuxLoss);
  lanes_.wait(kEnsLane, online);
  Blas& ens = lanes_.blas(kEnsLane);
  ensemble_heads(ens, d_, L_, state_.params.get(), nets_.online.z.get(), heads_.ve.get());
  site(kEnsembleLogits);
  lanes_.wait(kEnsLane, projection);
  ensemble_ce(d_, heads_.ve.get(), heads_.m.get(), heads_.ens_part.get(), ens.stream());
  mean_into(heads_.ens_part.get(), d_.E * d_.B, 1.0 / d_.D, scalars_.get() + kScEns, ens.stream());
  // The backward starts from the C51 heads on this lane once the MSE terms are made; the IQN, aux
  // and ensemble losses go on beside it, each head's backward on the lane of its forward
  // (step_lane_map.h). Its gradients are zeroed first.
  lanes_.wait(kMainLane, marks_.mse_terms);
  lanes_.wait(kMainLane, marks_.cleared);
  // The total and the forward's checks on the check lane once every lane is done (the backward
  // writes no forward slot).
  lanes_.gather(kCheckLane);
  total_loss(scalars_.get(), loss_weights_.d, heads_.total.get(), lanes_.stream(kCheckLane));
  site(kTotalLoss);
  flush_checks_beside(lanes_.mark(kCheckLane));
}

void CudaBackend::optimizer() {
  // Without the guard Adam's counter reads nothing of the step: in a captured step it advances on
  // a side lane, beside the backward's last launches, rather than between the norms and the update.
  const bool t_beside = lanes_.parallel() && !c_.guard.enabled;
  if (t_beside) {
    AdamGuard counts;
    counts.updated = checks_.updated_word();
    opt_.advance_t(state_.t.get(), counts, checks_.optimizer_shadow(),
                   lanes_.stream(step_lane::kUpdateCounter));
  }
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
    norm_check = checks_.take_due(kGradNorm);
    flush_checks();
  }
  // The checks beside the step: before the update when the guard reads them, else before the
  // step's record and first-fire capture read the bank (below).
  if (c_.guard.enabled) lanes_.join(kCheckLane);
  checks_.reserve_site(kAdamMoments);  // the sites' positions in order, though Adam checks both
  checks_.reserve_site(kParams);
  const AdamChecks checks{checks_.producer_sink(kAdamMoments), checks_.producer_sink(kParams)};
  AdamGuard guard;
  guard.updated = checks_.updated_word();
  if (c_.guard.enabled) {
    guard.status = checks_.status_word();
    if (!norm_check.empty()) guard.norms = norms_.get();
  }
  opt_.adam_step(bw_.grads.get(), state_.params.get(), state_.adam.get(), norms_.get(),
                 state_.t.get(), guard, checks_.optimizer_shadow(), checks, ratio_.delta.get(),
                 t_beside);
  checks_.put_back_first(norm_check);
  StepHealthIn health{checks_.health(), checks_.step_health()};
  if (ratio_.delta.get()) {
    opt_.norms_of(ratio_.delta.get(), ratio_.update_norms.get());
    opt_.norms_of(state_.params.get(), ratio_.weight_norms.get());
    health.update_norms = ratio_.update_norms.get();
    health.weight_norms = ratio_.weight_norms.get();
  }
  site(kAdamMoments);
  site(kParams);
  flush_checks();  // 21, 22 and 23 (unless their producer took them), without the guard the rest
  lanes_.join(kCheckLane);
  checks_.copy_late_captures();  // the slots checked by their producers, with capture on
  checks_.capture_context();     // before the target sync: the target as the step used it
  // The target sync beside the step record (which reads neither network).
  lanes_.wait(kNextLane, lanes_.mark());
  sync_target_if_due(gstep_.get(), c_.optim.target_sync, state_.params.get(), state_.target.get(),
                     state_.params.size(), lanes_.stream(kNextLane));
  checks_.pack_record(scalars_.get(), heads_.total.get(), norms_.get(), health, stream_.s);
}

}  // namespace nanscope::cuda
