// Session: the run file and first-fire dumps (when SessionOptions::out_dir is set).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "core/config_io.h"
#include "core/errors.h"
#include "core/utc_time.h"
#include "core/version.h"
#include "io/dump_file.h"
#include "io/run_file.h"
#include "model/batch_context.h"
#include "session/recording.h"

namespace nanscope {

void Session::open_recording() {
  if (options_.out_dir.empty()) return;
  rec_ = std::make_unique<Recording>();
  rec_->dir = options_.out_dir;
  rec_->created_utc = utc_now(kUtcIso);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(rec_->dir) / "dumps", ec);
  if (ec)
    throw IoError(
        fmt::format("{}: cannot create the output directory ({})", rec_->dir, ec.message()));
  // A device that captures first fires itself lets a recording run read back every few steps
  // instead of every step.
  if (DeviceSentinel* ds = backend_->device_sentinel()) capture_steps_ = ds->enable_capture(true);
}

void Session::record_injected(int slot, std::size_t index, double original) {
  if (rec_) rec_->injected.push_back({slot, index, original});
}

void Session::record_first_fire(int slot, const ScanResult& scan) {
  if (!rec_) return;
  Recording& r = *rec_;
  // A step read back later (settle_deferred) takes the buffer and context its device captured at
  // the fire; a step read at its end takes the live buffer and the state kept before the update.
  DeviceSentinel* ds = backend_->device_sentinel();
  const bool captured = ds && settling_;
  SlotView v = captured ? ds->captured_slot(slot) : backend_->slot(slot);
  DumpSlot d;
  d.index = slot;
  d.shape.assign(v.shape.begin(), v.shape.end());
  if (v.is_f64) {
    const auto* p = static_cast<const double*>(v.data);
    d.values.assign(p, p + v.count);  // float64 mode: stored as float32, like every slot buffer
  } else {
    const auto* p = static_cast<const float*>(v.data);
    d.values.assign(p, p + v.count);
  }
  // Device checks report kinds and counts; the first bad index comes from the captured copy.
  d.scan = ds ? scan_nonfinite(d.values.data(), d.values.size()) : scan;
  r.pending.push_back(std::move(d));
  if (!r.state_captured && captured) {
    if (!ds->captured_context(step_, r.state, r.batch))
      throw InternalError(
          fmt::format("no captured context for fold {} step {}, where slot {} first fired", fold_,
                      step_, slot));
    r.state_captured = true;  // a step with a slot injection is read at its end, never later
  } else if (!r.state_captured) {
    // Before the optimizer's update the live state is the state before the step; after it, the
    // snapshot taken just before the update is.
    if (r.pre_update_taken)
      backend_->read_kept_state(r.state);
    else
      backend_->read_state(r.state);
    r.state_captured = true;
    // The batch as sampled: a transient injection into it is not part of the step's context.
    r.batch = backend_->batch_context();
    for (const auto& o : r.injected) {
      if (o.slot != kBatch && o.slot != kIqnTau) continue;
      const BatchElement at = o.slot == kBatch ? locate_batch_element(backend_->dims(), o.index)
                                               : BatchElement{"tau", o.index};
      for (auto& a : r.batch)
        if (a.name == at.field) a.values[at.index] = o.value;
    }
  }
}

void Session::record_before_update() {
  // A step read back later takes the state its device captured (the optimizer's shadow).
  if (!rec_ || rec_->state_captured || read_later()) return;
  backend_->keep_state();
  rec_->pre_update_taken = true;
}

std::string Session::record_end_step(int entry_slot) {
  if (!rec_ || rec_->pending.empty()) return "";
  Recording& r = *rec_;
  DumpData d;
  d.fold = fold_;
  d.step = step_;
  d.global_step = global_step_;
  d.entry_slot = entry_slot;
  d.config_toml = to_toml(config_);
  d.backend = backend_->name();
  d.nanscope_version = kVersion;
  d.run_file = "../run.h5";
  d.seed = config_.run.seed;
  d.context_f64 =
      config_.model.precision == Precision::Float64 && backend_->kind() == BackendKind::Cpu;
  d.slots = std::move(r.pending);
  d.batch = r.batch;
  for (const ParamEntry* e : backend_->layout().existing()) {
    d.param_names.push_back(e->name);
    d.param_shapes.emplace_back(e->shape.begin(), e->shape.end());
  }
  d.state = r.state;
  d.flags = bank_.step_flags();
  const std::string rel = "dumps/" + dump_file_name(fold_, step_, entry_slot);
  const std::string path = (std::filesystem::path(r.dir) / rel).string();
  // The training thread pays only for the copies made at the fire; the file is written by a worker.
  r.writes.push_back(
      std::async(std::launch::async, [path, dump = std::move(d)] { write_dump(path, dump); }));
  r.dumps.push_back(path);
  r.pending.clear();
  return rel;
}

std::string Session::run_file_path() const {
  return rec_ ? (std::filesystem::path(rec_->dir) / "run.h5").string() : std::string();
}

const std::vector<std::string>& Session::dump_paths() const {
  static const std::vector<std::string> none;
  return rec_ ? rec_->dumps : none;
}

void Session::write_run_file() {
  if (!rec_) return;
  rec_->join_writes();  // every dump the run file names is complete first
  RunFileData r;
  r.nanscope_version = kVersion;
  r.created_utc = rec_->created_utc;
  r.backend = backend_->name();
  r.device_name = backend_->device_name();
  r.config_toml = to_toml(config_);
  r.seed = config_.run.seed;
  for (const auto& f : folds_)
    if (f.steps > 0) r.folds.push_back(f.flags);
  for (const auto& h : history_) {
    const auto& l = h.losses;
    r.steps.push_back(RunStepRow{h.fold, h.step, h.flags, l.total, l.grad_norm, l.c51, l.mse, l.cql,
                                 l.iqn, l.aux, l.ens, h.checked});
  }
  for (const auto& e : events_)
    r.events.push_back(RunEventRow{e.fold, e.step, e.kind, e.entry_slot, e.dump});
  nanscope::write_run_file(run_file_path(), r);
}

}  // namespace nanscope
