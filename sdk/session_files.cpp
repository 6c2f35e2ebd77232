// The session's files: the run file's data, the first-fire dumps, both written by the library's
// writer thread, and the writer's failures reported when asked (ns_writer_status) or at close.
#include <filesystem>
#include <iterator>
#include <memory>

#include "core/version.h"
#include "io/dump_file.h"
#include "sdk_session.h"

namespace nanscope::sdk {

namespace fs = std::filesystem;

void Session::start_run_file() {
  file_ = std::make_shared<RunFileData>();
  RunFileData& r = *file_;
  r.table = table_;
  r.nanscope_version = kVersion;
  r.created_utc = created_utc_;
  r.backend = dev_ ? "sdk-cuda" : "sdk-host";
  r.device_name = dev_ ? dev_->device_name() : "host";
  r.config_toml = config_text_;
  r.seed = seed_;
  keeping_ = HealthKeeping::for_table(*table_);
}

void Session::drop_health_not_kept(std::size_t rows, std::optional<int> first_fire) {
  for (std::size_t i = 0; i < rows && i < steps_.size(); ++i) {
    RunStepRow& row = steps_[i];
    if (!row.health.empty() && !keeping_.keeps(row.step, first_fire))
      SlotHealthRows().swap(row.health);
  }
}

void Session::decide_health(const FoldFlags& fold) {
  // The row `window` steps back: no later first fire can keep it, so it is decided now.
  if (steps_.size() <= static_cast<std::size_t>(keeping_.window)) return;
  const std::size_t i = steps_.size() - 1 - static_cast<std::size_t>(keeping_.window);
  RunStepRow& row = steps_[i];
  if (!row.health.empty() && !keeping_.keeps(row.step, fold.entry_step))
    SlotHealthRows().swap(row.health);
}

void Session::write_run_file_now() {
  // The steps not yet handed over are the fold's that ended: every row's health decided, they
  // move to the writer's copy of the run, which only the writer's thread touches.
  const std::optional<int> first_fire = folds_.empty() ? std::nullopt : folds_.back().entry_step;
  drop_health_not_kept(steps_.size(), first_fire);
  auto rows = std::make_shared<std::vector<RunStepRow>>(std::move(steps_));
  steps_.clear();
  const std::string path = (fs::path(run_dir_) / "run.h5").string();
  writer_->post([path, file = file_, rows, folds = folds_, events = events_] {
    file->steps.insert(file->steps.end(), std::make_move_iterator(rows->begin()),
                       std::make_move_iterator(rows->end()));
    rows->clear();
    file->folds = folds;
    file->events = events;
    file->watches.clear();  // each watch event's trip, in order (the file pairs them so)
    for (const RunEventRow& e : events)
      if (e.watch) file->watches.push_back(*e.watch);
    nanscope::write_run_file(path, *file);
  });
}

void Session::write_dump(int fold, int step, std::vector<CapturedSlot> slots) {
  DumpData d;
  d.fold = fold;
  d.step = step;
  d.global_step = step;
  d.entry_slot = bank_->readback().entry_slot.value_or(-1);
  d.config_toml = config_text_;
  d.backend = dev_ ? "sdk-cuda" : "sdk-host";
  d.nanscope_version = kVersion;
  d.run_file = "../run.h5";  // as the dump's folder sees it (docs/files.md)
  d.seed = seed_;
  d.table = table_;
  d.flags = bank_->step_flags();
  for (CapturedSlot& c : slots) {
    DumpSlot s;
    s.index = c.slot;
    s.shape.assign(c.shape.begin(), c.shape.end());
    s.values = std::move(c.values);
    s.values64 = std::move(c.values64);
    s.scan = c.scan;
    d.slots.push_back(std::move(s));
  }
  const std::string path =
      (fs::path(run_dir_) / "dumps" / dump_file_name(*table_, fold, step, d.entry_slot)).string();
  writer_->post([path, d = std::move(d)] { nanscope::write_dump(path, d); });
}

void Session::raise_writer_error() {
  if (const std::string e = writer_->take_error(); !e.empty())
    throw Error(NS_ERR_IO, "the library's writer: " + e);
}

}  // namespace nanscope::sdk
