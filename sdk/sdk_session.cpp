// The session's fold and step machine: folds and steps begun and ended, the checks of both
// paths, the guard, first fires, halts and dumps. Opening and registration: session_setup.cpp.
#include "sdk_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/version.h"
#include "device_path.h"
#include "dtypes.h"
#include "host_memory.h"
#include "io/dump_file.h"
#include "model/host_check.h"
#include "session/watch.h"

namespace nanscope::sdk {

namespace fs = std::filesystem;

void Session::begin_fold(int fold) {
  // The state first, then the number, and only then is the table fixed (a refused call changes
  // nothing: registration stays open).
  if (stage_ != Stage::BetweenFolds && stage_ != Stage::Registering)
    throw Error(NS_ERR_STATE, fmt::format("ns_fold_begin({}): fold {} has not ended", fold, fold_));
  if (stream_capturing())
    throw Error(NS_ERR_STATE, fmt::format("ns_fold_begin({}): the step's stream is being captured "
                                          "(folds begin and end outside a capture)",
                                          fold));
  if (fold != static_cast<int>(folds_.size()))
    throw Error(NS_ERR_ARGUMENT,
                fmt::format("ns_fold_begin({}): the next fold is {}", fold, folds_.size()));
  if (folds_planned_ > 0 && fold >= folds_planned_)
    throw Error(NS_ERR_ARGUMENT,
                fmt::format("ns_fold_begin({}): the run plans {} folds (options.folds)", fold,
                            folds_planned_));
  if (stage_ == Stage::Registering) freeze_table();
  if (dev_) on_device("ns_fold_begin", [&] { dev_->begin_fold(); });
  bank_.emplace(table_, setup_);
  bank_->begin_fold(fold);
  fold_ = fold;
  next_step_ = 0;
  halt_ = NS_HALT_NONE;
  halt_step_ = -1;
  fold_dump_.clear();
  tripped_.clear();
  stage_ = Stage::InFold;
}

void Session::begin_step(int step, void* stream) {
  if (stage_ != Stage::InFold)
    throw Error(NS_ERR_STATE,
                stage_ == Stage::InStep
                    ? fmt::format("ns_step_begin({}): step {} has not ended", step, step_)
                    : fmt::format("ns_step_begin({}): no fold has begun", step));
  if (step != next_step_)
    throw Error(NS_ERR_ARGUMENT, fmt::format("ns_step_begin({}): the next step of fold {} is {}",
                                             step, fold_, next_step_));
  if (dev_) {
    // The device counts its steps (a captured step runs at every replay); the host bank takes
    // them when it reads them (account_device).
    const bool capturing = on_device("ns_step_begin", [&] { return dev_->capturing(stream); });
    on_device("ns_step_begin", [&] { dev_->begin_step(stream); });
    stream_ = stream;
    stream_seen_ = true;
    step_captured_ = capturing;
    if (capturing) {
      capture_stream_ = stream;
      capture_stream_seen_ = true;
    }
  } else {
    bank_->begin_step(step);
  }
  step_ = step;
  guard_word_ = 0;
  updated_ = true;
  update_asked_ = false;
  first_fire_in_step_ = false;
  // A step's health rows are kept only with health on: a wide table without it keeps none.
  health_rows_ = health_ ? unmeasured_rows(table_->size()) : SlotHealthRows{};
  checked_ = SlotSet(table_->size());
  grad_norm_ = loss_ = loss_scale_ = std::numeric_limits<double>::quiet_NaN();
  scale_skipped_ = false;
  captured_.clear();
  stage_ = Stage::InStep;
}

void Session::report_loss_scale(double scale, bool skipped) {
  if (stage_ != Stage::InStep) throw Error(NS_ERR_STATE, "ns_loss_scale: outside a step");
  if (step_captured_ || stream_capturing())
    throw Error(NS_ERR_STATE,
                "ns_loss_scale: the step is being captured into a graph (its scale is read on the "
                "host after the scaler's update; report it from an uncaptured step)");
  if (!(scale > 0) || std::isinf(scale))
    throw Error(NS_ERR_ARGUMENT,
                fmt::format("ns_loss_scale: scale {} is not a finite positive number", scale));
  loss_scale_ = scale;
  scale_skipped_ = skipped;
}

void Session::check(const std::int32_t* slots, int count, void* stream, const std::uint64_t* at) {
  const char* call = at ? "ns_check_at" : "ns_check";
  if (stage_ != Stage::InStep) throw Error(NS_ERR_STATE, fmt::format("{}: outside a step", call));
  if (count < 0 || count > kMostChecksPerCall)
    throw Error(NS_ERR_ARGUMENT,
                fmt::format("{}: count {} is not 0 to {}", call, count, kMostChecksPerCall));
  if (count > 0 && !slots) throw Error(NS_ERR_ARGUMENT, fmt::format("{}: slots is NULL", call));
  // Every id and every buffer first, so that a bad one checks nothing.
  for (int i = 0; i < count; ++i) slot_at(slots[i], call);
  const auto address_of = [&](int i) {
    return at ? at[i] : slots_[static_cast<std::size_t>(slots[i])].address;
  };
  if (at) {
    // This step's buffers: each aligned for its slot's type, and one buffer a slot in a call (a
    // slot's copy is staged once before the list is checked).
    std::unordered_map<int, std::uint64_t> seen;
    for (int i = 0; i < count; ++i) {
      const RegisteredSlot& s = slots_[static_cast<std::size_t>(slots[i])];
      if (!setup_.checked(slots[i])) continue;
      if (at[i] == 0 || at[i] % element_bytes(s.dtype) != 0)
        throw Error(NS_ERR_MEMORY, fmt::format("ns_check_at: slot '{}': address {:#x} is not a "
                                               "buffer of its {} elements",
                                               s.name, at[i], dtype_name(s.dtype)));
      const auto [it, fresh] = seen.emplace(slots[i], at[i]);
      if (!fresh && it->second != at[i])
        throw Error(NS_ERR_ARGUMENT,
                    fmt::format("ns_check_at: slot '{}' is listed twice with two buffers", s.name));
    }
  }
  if (dev_) {
    if (stream != stream_)
      throw Error(NS_ERR_ARGUMENT,
                  fmt::format("{}: stream {} is not the step's stream {} (ns_step_begin's)", call,
                              stream, stream_));
    std::vector<SdkDeviceItem> items;
    for (int i = 0; i < count; ++i) {
      const RegisteredSlot& s = slots_[static_cast<std::size_t>(slots[i])];
      if (!setup_.checked(slots[i])) continue;
      if (at) {  // a buffer the device reads directly: proven device memory first
        const std::uint64_t bytes = static_cast<std::uint64_t>(s.count) * element_bytes(s.dtype);
        const std::string why =
            on_device(call, [&] { return dev_->pointer_problem(at[i], bytes); });
        if (!why.empty())
          throw Error(NS_ERR_MEMORY, fmt::format("{}: slot '{}': {} bytes at {:#x}: {}", call,
                                                 s.name, bytes, at[i], why));
      }
      items.push_back(
          {slots[i], address_of(i), static_cast<std::uint64_t>(s.count), element_type(s.dtype)});
    }
    on_device(call, [&] { dev_->check(items, stream); });
    for (const SdkDeviceItem& it : items) {
      checked_.set(it.slot);
      RegisteredSlot& s = slots_[static_cast<std::size_t>(it.slot)];
      s.checked_at = at ? it.address : 0;
    }
    return;
  }
  for (int i = 0; i < count; ++i) stage(slots[i], address_of(i), call);
  for (int i = 0; i < count; ++i) check_one(slots[i]);
}

void Session::stage(int slot, std::uint64_t address, const char* call) {
  RegisteredSlot& s = slots_[static_cast<std::size_t>(slot)];
  if (!setup_.checked(slot)) return;
  if (address == 0)
    throw Error(NS_ERR_SLOT,
                fmt::format("{}: slot '{}' has no buffer yet (ns_slot_set_address)", call, s.name));
  if (!host_copy(address, s.staging_bytes, s.staging.get()))
    throw Error(NS_ERR_MEMORY,
                fmt::format("{}: slot '{}': its {} bytes at {:#x} can no longer all be read "
                            "(freed, protected or moved? ns_slot_set_address)",
                            call, s.name, s.staging_bytes, address));
}

void Session::check_one(int slot) {
  const RegisteredSlot& s = slots_[static_cast<std::size_t>(slot)];
  if (!setup_.checked(slot)) {  // absent or deferred: the call site still takes its position
    bank_->record(slot, ScanResult{});
    return;
  }
  SlotView v;
  v.data = s.staging.get();
  v.count = static_cast<std::size_t>(s.count);
  v.type = element_type(s.dtype);
  v.shape = s.shape;
  HealthRow unused;
  HealthRow& row = health_ ? health_rows_[static_cast<std::size_t>(slot)] : unused;
  const ScanResult r = check_host_buffer(v, health_, row).scan;
  checked_.set(slot);
  if (s.role == NS_ROLE_GRAD_NORM) grad_norm_ = v.at(0);
  if (s.role == NS_ROLE_LOSS) loss_ = v.at(0);
  if (bank_->record(slot, r)) {
    first_fire_in_step_ = true;
    if (capture_) captured_.push_back(capture_host_buffer(slot, v, r, /*keep_float64=*/true));
  }
  if (bank_->step_fired() && guard_) guard_word_ = 1;
}

bool Session::allows_update() {
  if (stage_ != Stage::InStep) throw Error(NS_ERR_STATE, "ns_guard_allows_update: outside a step");
  bool fired = false;
  if (dev_) {
    if (step_captured_ || stream_capturing())
      throw Error(NS_ERR_STATE,
                  "ns_guard_allows_update: the step is being captured; its optimizer reads the "
                  "device guard word (ns_guard_word)");
    const std::vector<float> word = on_device(
        "ns_guard_allows_update", [&] { return dev_->copy_out(stream_, dev_->status_word(), 1); });
    std::uint32_t status = 0;
    std::memcpy(&status, word.data(), sizeof status);
    fired = status != 0;
  } else {
    fired = bank_->step_fired();
  }
  update_asked_ = true;
  updated_ = guard_allows_update(guard_config_, fired);
  return updated_;
}

std::uint64_t Session::guard_word_address() const {
  if (dev_) {
    if (stage_ == Stage::Registering)
      throw Error(NS_ERR_STATE, "ns_guard_word: the device word exists once the first fold began");
    return guard_ ? dev_->status_word() : dev_->zero_word();
  }
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&guard_word_));
}

ns_step_result Session::end_step() {
  if (stage_ != Stage::InStep) throw Error(NS_ERR_STATE, "ns_step_end: no step has begun");
  if (dev_ && step_captured_) {
    // Nothing ran yet: each replay is accounted by ns_step_replayed.
    graph_checked_ = checked_;
    graph_ready_ = true;
    step_captured_ = false;
    stage_ = Stage::InFold;
    const FoldFlags flags = bank_->readback();
    ns_step_result out{};
    out.struct_size = sizeof(ns_step_result);
    out.fired = out.first_fire = out.updated = -1;
    out.entry_slot = flags.entry_slot.value_or(-1);
    out.entry_step = flags.entry_step.value_or(-1);
    out.halt = halt_;
    out.halt_step = halt_step_;
    out.replays = 0;
    return out;
  }
  if (dev_) {
    if (stream_capturing())
      throw Error(NS_ERR_STATE,
                  "ns_step_end: the step began outside a capture that is now under way (it would "
                  "wait for the stream); end the capture, or begin the step inside it");
    return account_device(stream_, checked_, "ns_step_end");
  }
  bank_->end_step();
  return finish_step();
}

ns_step_result Session::finish_step() {
  const bool fired = bank_->step_fired();
  if (!update_asked_) updated_ = guard_allows_update(guard_config_, fired);
  RunStepRow row;
  row.fold = fold_;
  row.step = step_;
  row.flags = bank_->step_flags();
  row.checked = checked_;
  row.health = std::move(health_rows_);  // the next step starts its own
  const double none = std::numeric_limits<double>::quiet_NaN();
  row.losses.c51 = row.losses.mse = row.losses.cql = row.losses.iqn = row.losses.aux =
      row.losses.ens = none;
  row.losses.total = loss_;
  row.losses.grad_norm = grad_norm_;
  row.losses.loss_scale = loss_scale_;
  row.losses.group_norm.fill(none);
  // Before the health budget may drop the row's health (decide_health); recorded after the step's
  // first fire, which they follow in the run's events.
  std::vector<RunEventRow> noted = note_watches(row);
  loss_scale_ = none;
  scale_skipped_ = false;
  steps_.push_back(std::move(row));

  const FoldFlags flags = bank_->readback();
  decide_health(flags);
  ns_step_result out{};
  out.struct_size = sizeof(ns_step_result);
  out.fired = fired;
  out.first_fire = first_fire_in_step_;
  out.entry_slot = flags.entry_slot.value_or(-1);
  out.entry_step = flags.entry_step.value_or(-1);
  out.updated = updated_;
  out.replays = 1;

  const bool fold_first_fire =
      flags.entry_step && *flags.entry_step == step_ && first_fire_in_step_;
  if (fold_first_fire) {
    RunEventRow e{fold_, step_, EventKind::FirstFire, *flags.entry_slot, {}, std::nullopt};
    if (capture_ && !captured_.empty()) {
      e.dump = "dumps/" + dump_file_name(*table_, fold_, step_, *flags.entry_slot);
      fold_dump_ = e.dump;
      write_dump(fold_, step_, std::move(captured_));
    }
    events_.push_back(e);
  }
  events_.insert(events_.end(), noted.begin(), noted.end());
  // A halt is latched for the rest of the fold: the step that halts records its event (naming the
  // fold's dump, docs/files.md), and every later step of the fold reports it again, so a trainer
  // that goes on is told at each step. Later steps are checked and recorded as any other.
  if (halt_ == NS_HALT_NONE) {
    if (halt_on_nan_ && fired) {
      halt_ = NS_HALT_NAN;
      events_.push_back(
          RunEventRow{fold_, step_, EventKind::HaltNan, out.entry_slot, fold_dump_, std::nullopt});
    } else if (grad_collapse_below_ > 0 && std::isfinite(grad_norm_) &&
               grad_norm_ < grad_collapse_below_) {
      halt_ = NS_HALT_GRAD_COLLAPSE;
      events_.push_back(
          RunEventRow{fold_, step_, EventKind::HaltGradCollapse, -1, fold_dump_, std::nullopt});
    }
    if (halt_ != NS_HALT_NONE) halt_step_ = step_;
  }
  out.halt = halt_;
  out.halt_step = halt_step_;
  captured_.clear();
  next_step_ = step_ + 1;
  stage_ = Stage::InFold;
  return out;
}

std::vector<RunEventRow> Session::note_watches(const RunStepRow& row) {
  std::vector<RunEventRow> events;
  auto trip = [&](WatchCondition c, int slot, double value, double threshold) {
    if (!tripped_.insert({static_cast<int>(c), slot}).second) return;  // once per fold
    const WatchTrip t{c, slot, -1, fold_, step_, value, threshold};
    events.push_back(RunEventRow{fold_, step_, EventKind::Watch, slot, {}, t});
  };
  for (int s = 0; s < static_cast<int>(row.health.size()); ++s) {
    const HealthRow& h = row.health[static_cast<std::size_t>(s)];
    if (!measured(h)) continue;
    precision_watch(h, watch_, [&](WatchCondition c, double value, double threshold) {
      trip(c, s, value, threshold);
    });
  }
  const double scale = row.losses.loss_scale;
  if (loss_scale_floor_ > 0 && scale < loss_scale_floor_)
    trip(WatchCondition::LossScaleFloor, -1, scale, loss_scale_floor_);
  if (scale_skipped_) {
    // The first slot in dataflow order that held an Inf or NaN in the step (-1: none checked did).
    int first = -1;
    for (int s = 0; s < static_cast<int>(row.flags.size()); ++s)
      if (row.flags[static_cast<std::size_t>(s)] &&
          (first < 0 || (*table_)[s].rank < (*table_)[first].rank))
        first = s;
    events.push_back(RunEventRow{fold_, step_, EventKind::LossScaleSkip, first, {}, std::nullopt});
  }
  return events;
}

void Session::end_fold(int fold) {
  if (stage_ != Stage::InFold)
    throw Error(NS_ERR_STATE,
                stage_ == Stage::InStep
                    ? fmt::format("ns_fold_end({}): step {} has not ended", fold, step_)
                    : fmt::format("ns_fold_end({}): no fold is in progress", fold));
  if (stream_capturing())
    throw Error(NS_ERR_STATE, fmt::format("ns_fold_end({}): the step's stream is being captured "
                                          "(folds begin and end outside a capture)",
                                          fold));
  if (fold != fold_)
    throw Error(NS_ERR_ARGUMENT,
                fmt::format("ns_fold_end({}): the fold in progress is {}", fold, fold_));
  // Replays not yet accounted are the fold's last steps (this also waits for them).
  if (dev_ && graph_ready_) account_device(stream_, graph_checked_, "ns_fold_end", true);
  folds_.push_back(bank_->readback());
  bank_.reset();
  stage_ = Stage::BetweenFolds;
  write_run_file_now();
}

void Session::refuse_close_during_capture() {
  if (stage_ != Stage::Closed && stream_capturing())
    throw Error(NS_ERR_STATE,
                "ns_session_close: a stream of the session is being captured (closing would wait "
                "for it and break the capture); end the capture, then close");
}

void Session::writer_status(int* pending) {
  if (pending) *pending = writer_->pending();
  raise_writer_error();
}

void Session::close() {
  if (stage_ == Stage::Closed) return;
  // What cannot be accounted (a capture under way, a CUDA fault) is reported after the run file
  // of what was is written: closing always frees the session.
  std::optional<Error> failed;
  try {
    if (stage_ == Stage::InStep) end_step();
    if (stage_ == Stage::InFold && dev_ && graph_ready_)
      account_device(stream_, graph_checked_, "ns_session_close", true);
  } catch (const Error& e) {
    failed = e;
  }
  if (stage_ == Stage::InStep || stage_ == Stage::InFold) {
    folds_.push_back(bank_->readback());
    bank_.reset();
  }
  if (stage_ != Stage::Registering) write_run_file_now();
  stage_ = Stage::Closed;
  writer_->drain();
  raise_writer_error();
  if (failed) throw *failed;
}

}  // namespace nanscope::sdk
