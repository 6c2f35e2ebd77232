// A session opened and its table made: the options checked, the slots registered (each
// description checked, host memory proven readable, device memory asked of the device path),
// buffers moved and undeferred between steps, and the table fixed at the first fold
// (freeze_table). The fold and step machine is sdk_session.cpp's.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <new>
#include <sstream>

#include "core/utc_time.h"
#include "device_path.h"
#include "dtypes.h"
#include "host_memory.h"
#include "sdk_session.h"

namespace nanscope::sdk {

namespace fs = std::filesystem;

namespace {

std::string text_or_empty(const char* s) {
  return s ? std::string(s) : std::string();
}

// The first-fire copies' budget of a session of device buffers: kSdkCaptureBudgetBytes, or
// NANSCOPE_SDK_CAPTURE_MB (whole MiB, 0 for none) where the device has less memory to spare.
std::uint64_t capture_budget_bytes() {
  const char* v = std::getenv("NANSCOPE_SDK_CAPTURE_MB");
  if (!v || !*v) return kSdkCaptureBudgetBytes;
  constexpr std::uint64_t kMost = std::uint64_t{1} << 24;
  const std::string_view text(v);
  std::uint64_t mb = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), mb);
  if (ec != std::errc() || end != text.data() + text.size() || mb > kMost)
    throw Error(NS_ERR_ARGUMENT,
                fmt::format("ns_fold_begin: NANSCOPE_SDK_CAPTURE_MB='{}' is not a whole number of "
                            "MiB from 0 to {}",
                            v, kMost));
  return mb << 20;
}

// Element counts a run file and a dump can hold and an address range cannot wrap.
constexpr std::int64_t kMostElements = std::int64_t{1} << 40;

// `overwrite`: the earlier run in the directory goes, its run file and the dumps nanscope names
// (dumps/fold*.h5), so that no stale evidence sits beside the new run. Other files are kept.
void remove_earlier_run(const std::string& run_dir) {
  std::error_code ec;
  const fs::path run = fs::path(run_dir) / "run.h5";
  fs::remove(run, ec);
  if (ec)
    throw Error(NS_ERR_IO, fmt::format("ns_session_open: options.overwrite: cannot remove {} ({})",
                                       run.string(), ec.message()));
  for (fs::directory_iterator it(fs::path(run_dir) / "dumps", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("fold", 0) != 0 || it->path().extension() != ".h5") continue;
    std::error_code removed;
    fs::remove(it->path(), removed);
    if (removed)
      throw Error(NS_ERR_IO,
                  fmt::format("ns_session_open: options.overwrite: cannot remove {} ({})",
                              it->path().string(), removed.message()));
  }
}

}  // namespace

Session::Session(const ns_session_options& o) {
  run_dir_ = text_or_empty(o.run_dir);
  trainer_ = text_or_empty(o.trainer);
  config_text_ = text_or_empty(o.config_text);
  if (run_dir_.empty()) throw Error(NS_ERR_ARGUMENT, "ns_session_open: options.run_dir is empty");
  if (o.folds < 0) throw Error(NS_ERR_ARGUMENT, "ns_session_open: options.folds is negative");
  if (!(o.grad_collapse_below >= 0) || std::isinf(o.grad_collapse_below))
    throw Error(NS_ERR_ARGUMENT,
                "ns_session_open: options.grad_collapse_below must be 0 (off) "
                "or a finite positive threshold");
  if (const std::string why = trainer_name_problem(trainer_); !why.empty())
    throw Error(NS_ERR_ARGUMENT, "ns_session_open: options.trainer: " + why);
  const auto watch_problem = [](double v, double lo, double hi) {
    return !(v == 0 || (v >= lo && v <= hi));  // NaN is a problem too
  };
  if (watch_problem(o.watch_overflow_margin, 1, std::numeric_limits<double>::max()))
    throw Error(NS_ERR_ARGUMENT,
                "ns_session_open: options.watch_overflow_margin must be 0 (off) or a finite factor "
                ">= 1");
  if (watch_problem(o.watch_underflow_share, std::numeric_limits<double>::min(), 1))
    throw Error(NS_ERR_ARGUMENT,
                "ns_session_open: options.watch_underflow_share must be 0 (off) or a fraction in "
                "(0, 1]");
  if (watch_problem(o.watch_loss_scale_floor, std::numeric_limits<double>::min(),
                    std::numeric_limits<double>::max()))
    throw Error(NS_ERR_ARGUMENT,
                "ns_session_open: options.watch_loss_scale_floor must be 0 (off) or a finite "
                "positive scale");
  if ((o.watch_overflow_margin > 0 || o.watch_underflow_share > 0) && o.health == 0)
    throw Error(NS_ERR_ARGUMENT,
                "ns_session_open: options.watch_overflow_margin and watch_underflow_share read "
                "slot health: set options.health too");
  watch_.absmax = 0;
  watch_.overflow_margin = o.watch_overflow_margin;
  watch_.underflow_share = o.watch_underflow_share;
  loss_scale_floor_ = o.watch_loss_scale_floor;
  seed_ = o.seed;
  folds_planned_ = o.folds;
  guard_ = o.guard != 0;
  guard_config_.guard.enabled = guard_;
  health_ = o.health != 0;
  capture_ = o.capture != 0;
  halt_on_nan_ = o.halt_on_nan != 0;
  grad_collapse_below_ = o.grad_collapse_below;
  std::error_code ec;
  fs::create_directories(fs::path(run_dir_) / "dumps", ec);
  if (ec)
    throw Error(NS_ERR_IO, fmt::format("ns_session_open: run_dir '{}': cannot create it ({})",
                                       run_dir_, ec.message()));
  const fs::path run = fs::path(run_dir_) / "run.h5";
  if (!o.overwrite && fs::exists(run, ec))
    throw Error(NS_ERR_IO, fmt::format("ns_session_open: {} exists; set options.overwrite to "
                                       "replace it (its run is otherwise kept)",
                                       run.string()));
  if (o.overwrite) remove_earlier_run(run_dir_);
  created_utc_ = utc_now(kUtcIso);
  writer_ = std::make_unique<RunWriter>();
}

Session::~Session() = default;

const RegisteredSlot& Session::slot_at(int slot, const char* call) const {
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots_.size())
    throw Error(NS_ERR_SLOT, fmt::format("{}: slot {} is not registered ({} slots are)", call, slot,
                                         slots_.size()));
  return slots_[static_cast<std::size_t>(slot)];
}

int Session::register_slot(const ns_slot_desc& d) {
  if (stage_ != Stage::Registering)
    throw Error(NS_ERR_STATE,
                "ns_slot_register: slots are registered before the first fold "
                "begins (the table is fixed for the run)");
  RegisteredSlot s;
  s.name = text_or_empty(d.name);
  s.phase = d.phase && *d.phase ? d.phase : "step";
  s.consumers_text = text_or_empty(d.consumers);
  s.order = d.order;
  s.count = d.count;
  const std::string who = fmt::format("ns_slot_register: slot '{}'", s.name);
  if (const std::string why = slot_name_problem(s.name); !why.empty())
    throw Error(NS_ERR_ARGUMENT, fmt::format("ns_slot_register: slot '{}': {}", s.name, why));
  if (s.phase.size() > 31)
    throw Error(NS_ERR_ARGUMENT, fmt::format("{}: the phase is over 31 bytes", who));
  if (by_name_.count(s.name))
    throw Error(NS_ERR_ARGUMENT, fmt::format("{} is already registered", who));
  if (slots_.size() >= static_cast<std::size_t>(kMaxSlots))
    throw Error(NS_ERR_UNSUPPORTED, fmt::format("{}: a run has at most {} slots", who, kMaxSlots));
  if (d.order < 0) throw Error(NS_ERR_ARGUMENT, fmt::format("{}: order is negative", who));
  if (d.dtype < NS_F32 || d.dtype > NS_F16)
    throw Error(NS_ERR_ARGUMENT, fmt::format("{}: dtype {} is not an ns_dtype", who, d.dtype));
  s.dtype = static_cast<ns_dtype>(d.dtype);
  if (d.memory != NS_HOST && d.memory != NS_DEVICE)
    throw Error(NS_ERR_ARGUMENT, fmt::format("{}: memory {} is not an ns_memory", who, d.memory));
  s.memory = static_cast<ns_memory>(d.memory);
  if (d.state < NS_SLOT_CHECKED || d.state > NS_SLOT_DEFERRED)
    throw Error(NS_ERR_ARGUMENT, fmt::format("{}: state {} is not an ns_slot_state", who, d.state));
  s.state = static_cast<ns_slot_state>(d.state);
  if (d.role < NS_ROLE_NONE || d.role > NS_ROLE_GRAD_NORM)
    throw Error(NS_ERR_ARGUMENT, fmt::format("{}: role {} is not an ns_slot_role", who, d.role));
  s.role = static_cast<ns_slot_role>(d.role);
  if (d.ndim < 0 || d.ndim > 8)
    throw Error(NS_ERR_ARGUMENT, fmt::format("{}: ndim {} is not 0 to 8", who, d.ndim));
  s.shape.assign(d.shape, d.shape + d.ndim);
  if (d.ndim == 0) s.shape = {d.count};
  if (s.state != NS_SLOT_ABSENT && (d.count <= 0 || d.count > kMostElements))
    throw Error(NS_ERR_ARGUMENT,
                fmt::format("{}: count {} is not 1 to 2^40 elements", who, d.count));
  if (s.state != NS_SLOT_ABSENT) {
    std::int64_t product = 1;
    for (std::int64_t n : s.shape) product = n > 0 && product <= kMostElements ? product * n : -1;
    if (product != d.count)
      throw Error(NS_ERR_ARGUMENT, fmt::format("{}: shape {} does not hold count {} elements", who,
                                               fmt::join(s.shape, "x"), d.count));
  }
  if (s.state != NS_SLOT_ABSENT) {
    if (first_present_ >= 0 &&
        slots_[static_cast<std::size_t>(first_present_)].memory != s.memory) {
      const RegisteredSlot& other = slots_[static_cast<std::size_t>(first_present_)];
      throw Error(NS_ERR_UNSUPPORTED,
                  fmt::format("{}: a session checks host buffers or device buffers, not both "
                              "('{}' is {} memory)",
                              who, other.name, other.memory == NS_HOST ? "host" : "device"));
    }
    if (s.memory == NS_DEVICE && s.dtype == NS_F64)
      throw Error(NS_ERR_UNSUPPORTED,
                  fmt::format("{}: float64 device buffers are not checked by this version "
                              "(float32, bfloat16 and float16 ones are; float64 host buffers are)",
                              who));
    if (s.memory == NS_DEVICE && d.count >= (std::int64_t{1} << 31))
      throw Error(NS_ERR_UNSUPPORTED,
                  fmt::format("{}: a device buffer is checked in one piece of fewer than 2^31 "
                              "elements (register parts of it as slots)",
                              who));
    if (s.memory == NS_DEVICE && !dev_) dev_ = open_device_path(who.c_str());
  }
  if (s.role != NS_ROLE_NONE)
    for (int other : role_slots_)
      if (slots_[static_cast<std::size_t>(other)].role == s.role)
        throw Error(NS_ERR_ARGUMENT, fmt::format("{}: '{}' already has role {}", who,
                                                 slots_[static_cast<std::size_t>(other)].name,
                                                 static_cast<int>(s.role)));
  const bool absent = s.state == NS_SLOT_ABSENT;
  if (absent && d.address != 0)
    throw Error(NS_ERR_ARGUMENT, fmt::format("{}: an absent slot has no buffer (address 0)", who));
  const std::size_t staging_bytes = static_cast<std::size_t>(s.count) * element_bytes(s.dtype);
  slots_.push_back(std::move(s));
  try {
    // The buffer is proven readable (its range against the process's mappings) before its copy
    // is allocated: a wrong count is refused at once, never after gigabytes are reserved.
    if (d.address != 0 && !absent)
      set_address(static_cast<int>(slots_.size()) - 1, d.address, "ns_slot_register");
    RegisteredSlot& added = slots_.back();
    if (!absent && added.memory == NS_HOST) {
      added.staging.reset(new (std::nothrow) unsigned char[staging_bytes]);
      if (!added.staging)
        throw Error(
            NS_ERR_OUT_OF_MEMORY,
            fmt::format("{}: no memory for the {} bytes of its check's copy", who, staging_bytes));
      added.staging_bytes = staging_bytes;
    }
  } catch (...) {
    slots_.pop_back();
    throw;
  }
  const int id = static_cast<int>(slots_.size()) - 1;
  const RegisteredSlot& added = slots_.back();
  by_name_.emplace(added.name, id);
  if (added.role != NS_ROLE_NONE) role_slots_.push_back(id);
  if (!absent && first_present_ < 0) first_present_ = id;
  return id;
}

void Session::set_address(int slot, std::uint64_t address, const char* call) {
  slot_at(slot, call);
  RegisteredSlot& s = slots_[static_cast<std::size_t>(slot)];
  if (stage_ == Stage::InStep)
    throw Error(NS_ERR_STATE,
                fmt::format("{}: slot '{}': a buffer moves between steps only", call, s.name));
  if (s.state == NS_SLOT_ABSENT)
    throw Error(NS_ERR_SLOT, fmt::format("{}: slot '{}' was registered absent", call, s.name));
  const std::size_t bytes = static_cast<std::size_t>(s.count) * element_bytes(s.dtype);
  if (address % element_bytes(s.dtype) != 0)
    throw Error(NS_ERR_MEMORY, fmt::format("{}: slot '{}': address {:#x} is not aligned to its "
                                           "{} elements",
                                           call, s.name, address, dtype_name(s.dtype)));
  if (s.memory == NS_DEVICE) {
    if (stream_capturing())
      throw Error(NS_ERR_STATE, fmt::format("{}: slot '{}': the step's stream is being captured "
                                            "(a captured graph keeps the old address)",
                                            call, s.name));
    const std::string why = on_device(call, [&] { return dev_->pointer_problem(address, bytes); });
    if (!why.empty())
      throw Error(NS_ERR_MEMORY, fmt::format("{}: slot '{}': {} bytes at {:#x}: {}", call, s.name,
                                             bytes, address, why));
    if (graph_ready_ && s.address != address) graph_ready_ = false;  // its graph reads the old one
    s.address = address;
    return;
  }
  if (!host_readable(address, bytes))
    throw Error(NS_ERR_MEMORY,
                fmt::format("{}: slot '{}': {} bytes at {:#x} are not readable host memory (a "
                            "device pointer, a freed buffer or a wrong count?)",
                            call, s.name, bytes, address));
  s.address = address;
}

void Session::undefer(int slot) {
  slot_at(slot, "ns_slot_undefer");
  RegisteredSlot& s = slots_[static_cast<std::size_t>(slot)];
  if (stage_ == Stage::InStep) throw Error(NS_ERR_STATE, "ns_slot_undefer: between steps only");
  if (stream_capturing())
    throw Error(NS_ERR_STATE, "ns_slot_undefer: the step's stream is being captured");
  if (s.state != NS_SLOT_DEFERRED)
    throw Error(NS_ERR_SLOT, fmt::format("ns_slot_undefer: slot '{}' is not deferred", s.name));
  if (s.address == 0)
    throw Error(NS_ERR_SLOT, fmt::format("ns_slot_undefer: slot '{}' has no buffer yet "
                                         "(ns_slot_set_address first)",
                                         s.name));
  s.state = NS_SLOT_CHECKED;
  graph_ready_ = false;  // a captured step's check list does not hold it: capture the step again
  // Before the first fold the table is not made yet: it takes the slot's state when it is.
  if (stage_ == Stage::Registering) return;
  setup_.state[static_cast<std::size_t>(slot)] = SlotState::Clean;
  setup_.reason[static_cast<std::size_t>(slot)].clear();
  if (bank_) bank_->set_checked(slot, true);
}

// The first fold begins: the session's table (the run file's /slots) is made and fixed.
void Session::freeze_table() {
  if (slots_.empty()) throw Error(NS_ERR_STATE, "ns_fold_begin: no slot is registered");
  for (const RegisteredSlot& s : slots_)
    if (s.state == NS_SLOT_CHECKED && s.address == 0)
      throw Error(NS_ERR_SLOT, fmt::format("ns_fold_begin: slot '{}' is checked but has no buffer "
                                           "(ns_slot_set_address, or register it deferred)",
                                           s.name));
  std::vector<TrainerSlot> table;
  for (const RegisteredSlot& s : slots_)
    table.push_back(
        TrainerSlot{s.name,
                    s.phase,
                    fmt::format("[{}] {}{}", fmt::join(s.shape, ", "), dtype_name(s.dtype),
                                s.state == NS_SLOT_ABSENT ? " (absent)" : ""),
                    s.order,
                    {}});
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    std::stringstream list(slots_[i].consumers_text);
    std::string name;
    while (std::getline(list, name, ',')) {
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (name.empty()) continue;
      const auto k = by_name_.find(name);
      if (k == by_name_.end())
        throw Error(NS_ERR_SLOT, fmt::format("ns_fold_begin: slot '{}': consumer '{}' is not "
                                             "registered (register it, then begin the fold)",
                                             slots_[i].name, name));
      table[i].consumers.push_back(k->second);
    }
  }
  std::string why;
  table_ = SlotTable::of_trainer(trainer_, table, &why);
  if (!table_) throw Error(NS_ERR_ARGUMENT, "ns_fold_begin: the slot table: " + why);
  if (dev_) {
    SdkDeviceShape shape;
    shape.slots = table_->size();
    shape.health = health_;
    // Room for every present slot's first-fire copy (each rounded up to whole float4s), within the
    // budget: a slot fires for the first time at most once a fold.
    if (capture_)
      for (const RegisteredSlot& r : slots_)
        if (r.state != NS_SLOT_ABSENT)
          shape.capture_floats += (static_cast<std::uint64_t>(r.count) + 3) / 4 * 4;
    if (capture_)
      shape.capture_floats = std::min(shape.capture_floats, capture_budget_bytes() / sizeof(float));
    on_device("ns_fold_begin", [&] { dev_->prepare(shape); });
  }
  setup_ = SlotSetup(table_->size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    switch (slots_[i].state) {
      case NS_SLOT_CHECKED:
        setup_.state[i] = SlotState::Clean;
        setup_.reason[i].clear();
        break;
      case NS_SLOT_ABSENT:
        setup_.state[i] = SlotState::Absent;
        setup_.reason[i] = "registered absent: this buffer does not exist in this run";
        break;
      case NS_SLOT_DEFERRED:
        setup_.state[i] = SlotState::Deferred;
        setup_.reason[i] = "registered deferred: checked once the trainer undefers it";
        break;
    }
  }
  start_run_file();
  stage_ = Stage::BetweenFolds;
}

}  // namespace nanscope::sdk
