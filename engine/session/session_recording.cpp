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
  // First fires come with their buffers and the step's context, from wherever the checks ran.
  backend_->checks().set_capture(true);
}

void undo_batch_injections(const Dims& dims, const std::vector<InjectedValue>& injected,
                           BatchContext& batch) {
  for (const auto& inj : injected) {
    if (inj.slot != kBatch && inj.slot != kIqnTau) continue;
    const BatchElement at =
        inj.slot == kBatch ? locate_batch_element(dims, inj.index) : BatchElement{"tau", inj.index};
    for (auto& a : batch)
      if (a.name == at.field) a.values[at.index] = inj.value;
  }
}

void Session::record_injected(int slot, std::size_t index, double original) {
  injected_.push_back({slot, index, original});
}

// A first fire's dump: the slots as their checks saw them and the step's context, from the bank.
std::string Session::record_dump(StepOutcome& o, int entry_slot) {
  if (!rec_ || o.captured.empty()) return "";
  Recording& r = *rec_;
  if (!o.context)
    throw InternalError(
        fmt::format("no captured context for fold {} step {}, where slot {} first fired", fold_,
                    o.step, o.captured.front().slot));
  DumpData d;
  d.fold = fold_;
  d.step = o.step;
  d.global_step = o.global_step;
  d.entry_slot = entry_slot;
  d.config_toml = to_toml(config_);
  d.backend = backend_->name();
  d.nanscope_version = kVersion;
  d.run_file = "../run.h5";
  d.seed = config_.run.seed;
  d.context_f64 =
      config_.model.precision == Precision::Float64 && backend_->kind() == BackendKind::Cpu;
  for (CapturedSlot& c : o.captured)
    d.slots.push_back(DumpSlot{c.slot,
                               std::vector<std::uint64_t>(c.shape.begin(), c.shape.end()),
                               std::move(c.values),
                               c.scan,
                               {}});
  d.state = std::move(o.context->state);
  d.batch = std::move(o.context->batch);
  // The batch as sampled: a transient injection into it is not part of the step's context. The
  // values it overwrote are the current step's (a step with a slot injection reports at its end).
  if (o.global_step == global_step_) undo_batch_injections(backend_->dims(), injected_, d.batch);
  for (const ParamEntry* e : backend_->layout().existing()) {
    d.param_names.push_back(e->name);
    d.param_shapes.emplace_back(e->shape.begin(), e->shape.end());
  }
  d.flags = o.kinds;
  const std::string rel =
      "dumps/" + dump_file_name(*SlotTable::builtin(), fold_, o.step, entry_slot);
  const std::string path = (std::filesystem::path(r.dir) / rel).string();
  // The training thread pays only for the copies made at the fire; the file is written by a worker.
  r.writes.push_back(
      std::async(std::launch::async, [path, dump = std::move(d)] { write_dump(path, dump); }));
  r.dumps.push_back(path);
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
  r.scenario = options_.scenario;
  r.seed = config_.run.seed;
  for (const auto& f : folds_)
    if (f.steps > 0) r.folds.push_back(f.flags);
  for (const auto& h : history_) {
    const auto& l = h.losses;
    r.steps.push_back(RunStepRow{h.fold, h.step, h.flags, l, h.checked, h.health});
  }
  for (const auto& e : events_)
    r.events.push_back(RunEventRow{e.fold, e.step, e.kind, e.entry_slot, e.dump, e.watch});
  r.watches = watch_trips_;
  if (config_.history.in_run_file)
    for (const CheckpointMark& m : ring_.marks()) r.checkpoints.push_back(read_checkpoint(m));
  nanscope::write_run_file(run_file_path(), r);
}

}  // namespace nanscope
