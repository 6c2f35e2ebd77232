// CudaBackend as the check bank's host (CheckBankHost): what a step's status record means as a
// step outcome (losses, norms, health, the update), and first-fire capture's side of the trainer:
// the arrays a captured context copies and how they read back as a dump's state and batch.
#include "cuda_backend_impl.h"

namespace nanscope::cuda {

StepOutcome CudaBackend::outcome_of(const StepKey& key, const StepStatusRecord& h) const {
  StepOutcome o;
  o.step = key.step;
  o.global_step = key.global_step;
  StepLosses& l = o.losses;
  l.c51 = h.scalars[kScC51];
  l.mse = h.scalars[kScMse];
  l.cql = h.scalars[kScCql];
  l.iqn = d_.iqn ? h.scalars[kScIqn] : 0.0;
  l.aux = h.scalars[kScAux];
  l.ens = h.scalars[kScEns];
  l.total = h.total;
  l.grad_norm = h.grad_norm;
  for (int g = 0; g < kGroupCount; ++g) {
    l.group_norm[static_cast<std::size_t>(g)] = h.group_norm[g];
    o.update_ratio[static_cast<std::size_t>(g)] = h.update_ratio[g];
  }
  for (int s = 0; s < kBuiltinSlotCount; ++s)
    std::copy_n(h.health[s], kHealthFieldCount, o.health[static_cast<std::size_t>(s)].begin());
  // What the optimizer decided on the device, before the update ran (AdamGuard::updated).
  o.updated = h.updated != 0u;
  return o;
}

std::vector<ContextCapture::Source> CudaBackend::context_sources(const AdamShadow& shadow) {
  const auto buf = sampler_.buffers();
  std::vector<ContextCapture::Source> src = {
      {shadow.params, state_.params.size() * sizeof(float)},
      {state_.target.get(), state_.target.size() * sizeof(float)},
      {shadow.adam, state_.adam.size() * sizeof(float)},
      {shadow.t, sizeof(std::int64_t)},
      {buf.batch, buf.batch_count * sizeof(float)},
      {buf.actions, static_cast<std::size_t>(d_.B) * d_.D * sizeof(std::int32_t)}};
  if (d_.iqn) {
    src.push_back({buf.tau, static_cast<std::size_t>(d_.B) * d_.N * sizeof(float)});
    src.push_back({buf.tau_target, static_cast<std::size_t>(d_.B) * d_.Np * sizeof(float)});
    src.push_back({buf.tau_greedy, static_cast<std::size_t>(d_.B) * d_.K * sizeof(float)});
  }
  return src;
}

void CudaBackend::read_context(const std::function<const void*(int)>& at, StateSnapshot& state,
                               BatchContext& batch) {
  // The area holds the arrays as the live ones are laid out: the same readers serve.
  auto in = [&](ContextSource s) { return at(s); };
  read_state_at(static_cast<const float*>(in(kShadowParams)),
                static_cast<const float*>(in(kTargetParams)),
                static_cast<const float*>(in(kShadowAdam)),
                static_cast<const std::int64_t*>(in(kShadowT)), state);
  const bool iqn = d_.iqn;
  batch = batch_context_at({static_cast<const float*>(in(kBatchArrays)),
                            static_cast<const std::int32_t*>(in(kActions)),
                            iqn ? static_cast<const float*>(in(kTau)) : nullptr,
                            iqn ? static_cast<const float*>(in(kTauTarget)) : nullptr,
                            iqn ? static_cast<const float*>(in(kTauGreedy)) : nullptr});
}

}  // namespace nanscope::cuda
