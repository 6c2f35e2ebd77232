// CudaBackend: first-fire capture. The fused check copies a slot's buffer into its area at the
// slot's first fire in the fold; the optimizer leaves the state it started from in a shadow; at the
// step's end a first fire sends that state, the target network, the batch and the draws into a
// context area. The bank reads all of it with the fold's records (hand_over).
#include <algorithm>

#include "cuda_backend_impl.h"

namespace nanscope::cuda {

namespace {
// Context areas: as many as fit in this budget, between 2 and 16 (the session reads back at least
// every that many steps).
constexpr std::size_t kContextBudgetBytes = std::size_t{1} << 30;
enum Source {
  kShadowParams,
  kTarget,
  kShadowAdam,
  kShadowT,
  kBatchSrc,
  kActions,
  kTau,
  kTauTarget,
  kTauGreedy
};
}  // namespace

int CudaBackend::enable_capture(bool on) {
  flush_checks();
  sync();
  drop_graph();  // the step's graph gains or loses the capture's work
  if (!on) {
    cap_.reset();
    return 0;
  }
  auto c = std::make_unique<Capture>();
  for (int s = 0; s < kSlotCount; ++s)
    if (!shapes_[s].empty())
      c->slots[static_cast<std::size_t>(s)] = DeviceArray<float>(read_buf(s).n);
  c->shadow_params = DeviceArray<float>(params_.size());
  c->shadow_adam = DeviceArray<float>(adam_.size());
  zero(c->shadow_params.get(),
       params_.size() * sizeof(float));  // the layout's padding is never written
  zero(c->shadow_adam.get(), adam_.size() * sizeof(float));
  zero(c->shadow_t.get(), sizeof(std::int64_t));
  const auto buf = sampler_.buffers();
  std::vector<ContextCapture::Source> src = {
      {c->shadow_params.get(), params_.size() * sizeof(float)},
      {target_.get(), target_.size() * sizeof(float)},
      {c->shadow_adam.get(), adam_.size() * sizeof(float)},
      {c->shadow_t.get(), sizeof(std::int64_t)},
      {buf.batch, buf.batch_count * sizeof(float)},
      {buf.actions, static_cast<std::size_t>(d_.B) * d_.D * sizeof(std::int32_t)}};
  if (d_.iqn) {
    src.push_back({buf.tau, static_cast<std::size_t>(d_.B) * d_.N * sizeof(float)});
    src.push_back({buf.tau_target, static_cast<std::size_t>(d_.B) * d_.Np * sizeof(float)});
    src.push_back({buf.tau_greedy, static_cast<std::size_t>(d_.B) * d_.K * sizeof(float)});
  }
  std::size_t bytes = 0;
  for (const auto& s : src) bytes += s.bytes;
  const int areas = static_cast<int>(std::clamp<std::size_t>(kContextBudgetBytes / bytes, 2, 16));
  c->contexts = std::make_unique<ContextCapture>(src, areas, stream_.s);
  sync();
  cap_ = std::move(c);
  return areas;
}

float* CudaBackend::capture_area(int slot) {
  return cap_ ? cap_->slots[static_cast<std::size_t>(slot)].get() : nullptr;
}

AdamShadow CudaBackend::optimizer_shadow() {
  if (!cap_) return {};
  return {cap_->shadow_params.get(), cap_->shadow_adam.get(), cap_->shadow_t.get()};
}

void CudaBackend::capture_context() {
  if (cap_) cap_->contexts->capture_if_fired(bank_.first_fire_word(), bank_.step_word());
}

void CudaBackend::take_context_table() {
  if (!cap_) return;
  cap_->steps = cap_->contexts->take_table();
  ++d2h_;
}

void CudaBackend::clear_contexts() {
  if (cap_) cap_->contexts->clear();
}

SlotView CudaBackend::captured_slot(int slot) {
  if (!cap_ || shapes_[slot].empty()) return {};
  const DeviceArray<float>& a = cap_->slots[static_cast<std::size_t>(slot)];
  return mirror_view(slot, a.get(), a.size());
}

bool CudaBackend::captured_context(int step, StateSnapshot& state, BatchContext& batch) {
  if (!cap_) return false;
  const auto& steps = cap_->steps;
  const auto at = std::find(steps.begin(), steps.end(), step);
  if (at == steps.end()) return false;
  const int area = static_cast<int>(at - steps.begin());
  // The area holds the arrays as the live ones are laid out: the same readers serve.
  auto in = [&](Source s) { return cap_->contexts->address(area, s); };
  read_state_at(static_cast<const float*>(in(kShadowParams)),
                static_cast<const float*>(in(kTarget)), static_cast<const float*>(in(kShadowAdam)),
                static_cast<const std::int64_t*>(in(kShadowT)), state);
  const bool iqn = d_.iqn;
  batch = batch_context_at({static_cast<const float*>(in(kBatchSrc)),
                            static_cast<const std::int32_t*>(in(kActions)),
                            iqn ? static_cast<const float*>(in(kTau)) : nullptr,
                            iqn ? static_cast<const float*>(in(kTauTarget)) : nullptr,
                            iqn ? static_cast<const float*>(in(kTauGreedy)) : nullptr});
  return true;
}

}  // namespace nanscope::cuda
