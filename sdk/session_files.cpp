// The session's files: the run file's data, the first-fire dumps, both written by the library's
// writer thread, and the writer's failures reported at the next call.
#include <filesystem>

#include "core/version.h"
#include "io/dump_file.h"
#include "sdk_session.h"

namespace nanscope::sdk {

namespace fs = std::filesystem;

RunFileData Session::snapshot() const {
  RunFileData r;
  r.table = table_;
  r.nanscope_version = kVersion;
  r.created_utc = created_utc_;
  r.backend = dev_ ? "sdk-cuda" : "sdk-host";
  r.device_name = dev_ ? dev_->device_name() : "host";
  r.config_toml = config_text_;
  r.seed = seed_;
  r.folds = folds_;
  r.steps = steps_;
  r.events = events_;
  return r;
}

void Session::write_run_file_now() {
  const std::string path = (fs::path(run_dir_) / "run.h5").string();
  writer_->post([path, r = snapshot()] { nanscope::write_run_file(path, r); });
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
  d.run_file = "run.h5";
  d.seed = seed_;
  d.table = table_;
  d.flags = bank_->step_flags();
  for (CapturedSlot& c : slots) {
    DumpSlot s;
    s.index = c.slot;
    s.shape.assign(c.shape.begin(), c.shape.end());
    s.values = std::move(c.values);
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
