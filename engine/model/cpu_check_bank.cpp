#include "model/cpu_check_bank.h"

#include <algorithm>

#include "model/host_check.h"

namespace nanscope {

CpuCheckBank::CpuCheckBank(Backend& backend, const Config& config)
    : backend_(backend), config_(config), bank_(SlotTable::builtin(), slot_setup(config)) {}

void CpuCheckBank::begin_fold(const SlotSetup& setup) {
  bank_ = SentinelBank(SlotTable::builtin(), setup);
}

void CpuCheckBank::begin_step(const StepKey& key) {
  bank_.begin_step(key.step);
  out_ = StepOutcome{};
  out_.step = key.step;
  out_.global_step = key.global_step;
  updating_done_ = false;
}

void CpuCheckBank::check(int slot) {
  // Every call site takes an execution position, checked or not.
  if (!bank_.setup().checked(slot)) {
    bank_.record(slot, ScanResult{});
  } else {
    const SlotView v = backend_.slot(slot);
    const bool health = config_.sentinel.health;
    const ScanResult r =
        check_host_buffer(v, health, out_.health[static_cast<std::size_t>(slot)]).scan;
    if (health) measure_learner(slot, v);
    // A copy is made only when a slot fires for the first time in its fold.
    if (bank_.record(slot, r) && capture_) {
      out_.captured.push_back(capture_host_buffer(slot, v, r));
      keep_context();
    }
  }
  if (observer_) observer_->check(slot);
}

namespace {

template <class T>
float largest_mass_error(const T* x, std::size_t n, int atoms, bool log_probs) {
  double worst = -1;
  for (std::size_t r = 0; r + static_cast<std::size_t>(atoms) <= n; r += atoms)
    worst = std::max(worst, c51_mass_error(x + r, atoms, log_probs));
  return worst < 0 ? health_nan() : static_cast<float>(worst);
}

// Slot 14 [B, N, A] against slot 12's taus [B, N].
template <class T>
float crossing_fraction(const T* q, const T* tau, std::int64_t B, std::int64_t N, std::int64_t A) {
  std::uint64_t crossed = 0, ordered = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t a = 0; a < A; ++a) {
      const CrossingCount c = quantile_crossings(q + b * N * A + a, static_cast<int>(A),
                                                 tau + b * N, static_cast<int>(N));
      crossed += c.crossed;
      ordered += c.ordered;
    }
  return ordered ? static_cast<float>(static_cast<double>(crossed) / static_cast<double>(ordered))
                 : health_nan();
}

}  // namespace

void CpuCheckBank::measure_learner(int slot, const SlotView& v) {
  HealthRow& row = out_.health[static_cast<std::size_t>(slot)];
  const WatchConfig& w = config_.watch;
  if (w.c51_mass > 0 && (builtin_slot(slot).roles & kRoleC51Rows) && !v.shape.empty()) {
    const int atoms = static_cast<int>(v.shape.back());
    row[kHealthMassError] =
        v.is_f64() ? largest_mass_error(static_cast<const double*>(v.data), v.count, atoms,
                                        (builtin_slot(slot).roles & kRoleLogProbs) != 0)
                   : largest_mass_error(static_cast<const float*>(v.data), v.count, atoms,
                                        (builtin_slot(slot).roles & kRoleLogProbs) != 0);
  }
  if (w.quantile_crossing > 0 && (builtin_slot(slot).roles & kRoleQuantiles) &&
      v.shape.size() == 3) {
    const SlotView tau = backend_.slot(kIqnTau);
    const auto B = v.shape[0], N = v.shape[1], A = v.shape[2];
    row[kHealthCrossing] = v.is_f64()
                               ? crossing_fraction(static_cast<const double*>(v.data),
                                                   static_cast<const double*>(tau.data), B, N, A)
                               : crossing_fraction(static_cast<const float*>(v.data),
                                                   static_cast<const float*>(tau.data), B, N, A);
  }
}

// The state before the step: live until the update, kept just before it after that.
void CpuCheckBank::keep_context() {
  if (out_.context) return;
  StepContext c;
  if (updating_done_)
    backend_.read_kept_state(c.state);
  else
    backend_.read_state(c.state);
  c.batch = backend_.batch_context();
  out_.context = std::move(c);
}

bool CpuCheckBank::allow_update() {
  // A first fire after the update (adam_moments, params) needs the state the update started from.
  if (capture_ && !out_.context) backend_.keep_state();
  updating_done_ = true;
  // Decided once, before the update: a fire in what the update leaves (adam_moments, params)
  // does not undo an update that ran.
  out_.updated = guard_allows_update(config_, bank_.step_fired());
  return out_.updated;
}

std::vector<StepOutcome> CpuCheckBank::end_step() {
  bank_.end_step();
  out_.kinds = bank_.step_flags();
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    const SlotRecord& rec = bank_.slot_record(s);
    if (rec.first_step != out_.step || !(out_.kinds[static_cast<std::size_t>(s)])) continue;
    out_.first_count[static_cast<std::size_t>(s)] = rec.count;
    out_.first_exec[static_cast<std::size_t>(s)] = rec.exec_position;
  }
  out_.losses = backend_.losses();
  std::vector<StepOutcome> ready;
  ready.push_back(std::move(out_));
  out_ = StepOutcome{};
  return ready;
}

}  // namespace nanscope
