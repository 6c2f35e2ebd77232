#include "model/cpu_check_bank.h"

namespace nanscope {

CpuCheckBank::CpuCheckBank(Backend& backend, const Config& config)
    : backend_(backend), config_(config), bank_(slot_setup(config)) {}

void CpuCheckBank::begin_fold(const SlotSetup& setup) {
  bank_ = SentinelBank(setup);
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
    const ScanResult r = scan_view(v);
    // A copy is made only when a slot fires for the first time in its fold.
    if (bank_.record(slot, r) && capture_) {
      CapturedSlot c;
      c.slot = slot;
      c.shape = v.shape;
      c.values.resize(v.count);
      for (std::size_t i = 0; i < v.count; ++i) c.values[i] = static_cast<float>(v.at(i));
      c.scan = r;
      out_.captured.push_back(std::move(c));
      keep_context();
    }
  }
  if (observer_) observer_->check(slot);
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
  return guard_allows_update(config_, bank_.step_fired());
}

std::vector<StepOutcome> CpuCheckBank::end_step() {
  bank_.end_step();
  out_.kinds = bank_.step_flags();
  for (int s = 0; s < kSlotCount; ++s) {
    const SlotRecord& rec = bank_.slot_record(s);
    if (rec.first_step != out_.step || !(out_.kinds[static_cast<std::size_t>(s)])) continue;
    out_.first_count[static_cast<std::size_t>(s)] = rec.count;
    out_.first_exec[static_cast<std::size_t>(s)] = rec.exec_position;
  }
  out_.losses = backend_.losses();
  out_.updated = guard_allows_update(config_, bank_.step_fired());
  std::vector<StepOutcome> ready;
  ready.push_back(std::move(out_));
  out_ = StepOutcome{};
  return ready;
}

}  // namespace nanscope
