#include "core/sentinel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/half_float.h"

namespace nanscope {

std::vector<std::string> kind_names(std::uint8_t kinds) {
  std::vector<std::string> out;
  if (kinds & kKindNaN) out.push_back("nan");
  if (kinds & kKindPosInf) out.push_back("posinf");
  if (kinds & kKindNegInf) out.push_back("neginf");
  return out;
}

const char* state_name(SlotState s) {
  switch (s) {
    case SlotState::Clean:
      return "clean";
    case SlotState::Fired:
      return "fired";
    case SlotState::Absent:
      return "absent";
    case SlotState::Deferred:
      return "deferred";
    case SlotState::Disabled:
      return "disabled";
  }
  return "?";
}

const char* backward_stage(int slot) {
  return slot == kBwDHS2Main ? "main" : (slot == kBwDHS2Aux ? "aux" : "iqn");
}

const char* backward_stage_description(int slot) {
  if (slot == kBwDHS2Main) return "main chain (c51 + MSE + CQL + branch concat)";
  if (slot == kBwDHS2Aux) return "aux SAXPY";
  return "IQN copy / per-sample IQN backward";
}

SlotSetup slot_setup(const Config& c) {
  const SlotTable& table = *SlotTable::builtin();
  SlotSetup s(table.size());
  for (const auto& info : table)
    if (info.starts_deferred) {
      s.state[info.index] = SlotState::Deferred;
      s.reason[info.index] =
          "deferred until the ensemble's guards are verified; sentinel.undefer = [" +
          std::to_string(info.index) + "] checks it";
    }
  for (int i : c.sentinel.undefer) {
    s.state[i] = SlotState::Clean;
    s.reason[i].clear();
  }
  for (int i : c.sentinel.disabled) {
    s.state[i] = SlotState::Disabled;
    s.reason[i] = "turned off by sentinel.disabled";
  }
  if (!c.iqn_enabled())
    for (const auto& info : table)
      if (info.iqn_only) {
        s.state[info.index] = SlotState::Absent;
        s.reason[info.index] = "no IQN head in this run (loss.lambda_iqn = 0)";
      }
  return s;
}

namespace {
// A value's kind in its own type: float and double by the standard tests, the 16-bit types by
// their bits (half_float.h), so no value is converted to be classified.
template <class T>
bool is_finite(T x) {
  return std::isfinite(x);
}
template <class T>
std::uint8_t nonfinite_kind(T x) {
  return std::isnan(x) ? kKindNaN : (x > 0 ? kKindPosInf : kKindNegInf);
}
template <class T>
double widened(T x) {
  return x;
}
// The 16-bit types, by their bits (non-templates: chosen over the templates above).
template <class H>
std::uint8_t half_kind(H x) {
  return half_nan(x) ? kKindNaN : ((x.bits & 0x8000) ? kKindNegInf : kKindPosInf);
}
bool is_finite(BFloat16 x) {
  return !half_nonfinite(x);
}
bool is_finite(Float16 x) {
  return !half_nonfinite(x);
}
std::uint8_t nonfinite_kind(BFloat16 x) {
  return half_kind(x);
}
std::uint8_t nonfinite_kind(Float16 x) {
  return half_kind(x);
}
double widened(BFloat16 x) {
  return static_cast<float>(x);
}
double widened(Float16 x) {
  return static_cast<float>(x);
}
}  // namespace

template <class T>
ScanResult scan_nonfinite(const T* data, std::size_t count) {
  ScanResult r;
  for (std::size_t i = 0; i < count; ++i) {
    const T x = data[i];
    if (is_finite(x)) continue;
    r.kinds |= nonfinite_kind(x);
    if (r.count++ == 0) r.first_bad_index = static_cast<std::int64_t>(i);
  }
  return r;
}
template ScanResult scan_nonfinite<float>(const float*, std::size_t);
template ScanResult scan_nonfinite<BFloat16>(const BFloat16*, std::size_t);
template ScanResult scan_nonfinite<Float16>(const Float16*, std::size_t);

template <class T>
Census census(const T* data, std::size_t count, std::size_t keep_bad) {
  Census c;
  for (std::size_t i = 0; i < count; ++i) {
    const T v = data[i];
    if (is_finite(v)) {
      const double x = widened(v);
      c.finite_min = c.finite ? std::min(c.finite_min, x) : x;
      c.finite_max = c.finite ? std::max(c.finite_max, x) : x;
      c.finite_sum += x;
      ++c.finite;
      continue;
    }
    const std::uint8_t k = nonfinite_kind(v);
    c.kinds |= k;
    (k == kKindNaN ? c.nan : (k == kKindPosInf ? c.posinf : c.neginf)) += 1;
    if (c.first_bad.size() < keep_bad) c.first_bad.push_back(static_cast<std::int64_t>(i));
  }
  return c;
}
template Census census<float>(const float*, std::size_t, std::size_t);
template Census census<double>(const double*, std::size_t, std::size_t);
template Census census<BFloat16>(const BFloat16*, std::size_t, std::size_t);
template Census census<Float16>(const Float16*, std::size_t, std::size_t);
template ScanResult scan_nonfinite<double>(const double*, std::size_t);

SentinelBank::SentinelBank(SlotTableRef table, SlotSetup setup)
    : table_(std::move(table)), setup_(std::move(setup)) {
  if (setup_.size() != table_->size())
    throw std::logic_error("SentinelBank: the setup and the table differ in width");
  slots_.resize(setup_.state.size());
  step_flags_.assign(setup_.state.size(), 0);
  begin_fold(0);
}

void SentinelBank::begin_fold(int fold) {
  fold_ = fold;
  for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i] = SlotRecord{setup_.state[i]};
  steps_ = 0;
  begin_step(0);
}

void SentinelBank::begin_step(int step) {
  step_ = step;
  exec_ = 0;
  // Only the flags that fired are cleared: a step of a wide table costs what fired, not its width.
  for (int s : fired_this_step_) step_flags_[static_cast<std::size_t>(s)] = 0;
  fired_this_step_.clear();
  step_fired_ = false;
}

bool SentinelBank::record(int slot, const ScanResult& r) {
  return record_at(slot, r, exec_++);
}

bool SentinelBank::record_at(int slot, const ScanResult& r, int position) {
  if (!setup_.checked(slot) || r.kinds == 0) return false;
  std::uint8_t& flags = step_flags_[static_cast<std::size_t>(slot)];
  if (flags == 0) fired_this_step_.push_back(slot);
  flags |= r.kinds;
  step_fired_ = true;
  SlotRecord& rec = slots_[slot];
  if (rec.first_step < 0) {
    rec.state = SlotState::Fired;
    rec.first_step = step_;
    rec.count = r.count;
    rec.exec_position = position;
    rec.kinds |= r.kinds;
    return true;
  }
  rec.kinds |= r.kinds;
  return false;
}

void SentinelBank::end_step() {
  ++steps_;
}

void SentinelBank::set_checked(int slot, bool on) {
  setup_.set_checked(slot, on);
  SlotRecord& rec = slots_[static_cast<std::size_t>(slot)];
  if (rec.first_step < 0) rec.state = setup_.state[static_cast<std::size_t>(slot)];
}

std::optional<int> first_by_rank(const SlotTable& table, const std::vector<SlotRecord>& slots,
                                 std::int64_t step) {
  std::optional<int> best;
  const int n = std::min(table.size(), static_cast<int>(slots.size()));
  for (int i = 0; i < n; ++i)
    if (slots[static_cast<std::size_t>(i)].first_step == step &&
        (!best || table[i].rank < table[*best].rank))
      best = i;
  return best;
}

std::optional<RunEntry> run_entry(std::size_t folds,
                                  const std::function<const FoldFlags&(std::size_t)>& flags) {
  for (std::size_t k = 0; k < folds; ++k)
    if (const FoldFlags& f = flags(k); f.entry_slot)
      return RunEntry{*f.entry_slot, static_cast<int>(k), *f.entry_step};
  return std::nullopt;
}

std::optional<RunEntry> run_backward_entry(
    std::size_t folds, const std::function<const FoldFlags&(std::size_t)>& flags) {
  for (std::size_t k = 0; k < folds; ++k)
    if (const FoldFlags& f = flags(k); f.backward_entry)
      return RunEntry{f.backward_entry->slot, static_cast<int>(k), f.backward_entry->step};
  return std::nullopt;
}

void derive_entries(const SlotTable& table, FoldFlags& f) {
  f.entry_slot.reset();
  f.entry_step.reset();
  f.backward_entry.reset();
  std::int64_t earliest = -1;
  for (const auto& s : f.slots)
    if (s.first_step >= 0 && (earliest < 0 || s.first_step < earliest)) earliest = s.first_step;
  if (earliest >= 0) {
    f.entry_slot = first_by_rank(table, f.slots, earliest);
    f.entry_step = static_cast<int>(earliest);
  }
  // The backward entry: nanscope's own trainer checks one buffer at three moments (33-35).
  if (!table.is_builtin()) return;
  for (int s : {kBwDHS2Main, kBwDHS2Aux, kBwDHS2Iqn}) {
    const auto& r = f.slots[s];
    if (r.first_step >= 0 && (!f.backward_entry || r.first_step < f.backward_entry->step))
      f.backward_entry = BackwardEntry{s, static_cast<int>(r.first_step)};
  }
}

FoldFlags SentinelBank::readback() const {
  FoldFlags f;
  f.fold = fold_;
  f.steps = steps_;
  f.slots = slots_;
  derive_entries(*table_, f);
  return f;
}

}  // namespace nanscope
