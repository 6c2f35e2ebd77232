// The session's device path after the fact: what the device ran (a step, or the replays of a
// captured one) read back and accounted step by step into the fold's bank, and the capture queries
// that guard the calls a capture would break.
#include <algorithm>
#include <limits>

#include "device_path.h"
#include "dtypes.h"
#include "sdk_session.h"

namespace nanscope::sdk {

bool Session::stream_capturing() {
  if (!dev_ || !stream_seen_) return false;
  return on_device("a capture query", [&] {
    return dev_->capturing(stream_) || (capture_stream_seen_ && dev_->capturing(capture_stream_));
  });
}

ns_step_result Session::step_replayed(void* stream) {
  if (!dev_)
    throw Error(NS_ERR_STATE, "ns_step_replayed: the session checks host buffers (no graphs)");
  if (stage_ != Stage::InFold)
    throw Error(NS_ERR_STATE, stage_ == Stage::InStep
                                  ? "ns_step_replayed: a step is in progress (ns_step_end first)"
                                  : "ns_step_replayed: no fold is in progress");
  if (!graph_ready_)
    throw Error(NS_ERR_STATE,
                "ns_step_replayed: no step of this fold was captured into a graph (ns_step_begin "
                "to ns_step_end during a stream capture)");
  if (on_device("ns_step_replayed", [&] { return dev_->capturing(stream); }))
    throw Error(NS_ERR_STATE, "ns_step_replayed: the stream is being captured");
  stream_ = stream;       // the stream the trainer replays on is the one later calls ask about
  update_asked_ = false;  // a replay's update is the guard word's
  return account_device(stream, graph_checked_, "ns_step_replayed");
}

ns_step_result Session::account_device(void* stream, const SlotSet& checked, const char* call,
                                       bool none_ok) {
  const SdkDeviceRead read = on_device(call, [&] { return dev_->read(stream); });
  if (read.steps == 0) {
    if (none_ok) return ns_step_result{};
    throw Error(NS_ERR_STATE, fmt::format("{}: no step ran on stream {} since the last account "
                                          "(the graph was not launched there?)",
                                          call, stream));
  }
  const bool step_asked = update_asked_;
  // The loss scale reported in the step that ends here is that step's: the last one accounted
  // (replays before it have none).
  const double reported_scale = loss_scale_;
  const bool reported_skip = scale_skipped_;
  // The last step's result, with what any of the steps accounted here did: a fire, a first fire
  // and the first halt are not lost when several replays are accounted at once.
  ns_step_result out{}, any{};
  for (std::uint32_t i = 0; i < read.steps; ++i) {
    const std::size_t row = std::min<std::size_t>(i, read.row_count() - 1);
    const bool last = i + 1 == read.steps;
    loss_scale_ = last ? reported_scale : std::numeric_limits<double>::quiet_NaN();
    scale_skipped_ = last && reported_skip;
    step_ = next_step_;
    bank_->begin_step(step_);
    first_fire_in_step_ = false;
    captured_.clear();
    // The device bank is as wide as the table (absent slots never fire).
    const int device_slots = std::min(static_cast<int>(slots_.size()), read.slots);
    for (int slot = 0; slot < device_slots; ++slot) {
      const std::uint8_t kinds = read.kinds(row, slot);
      if (kinds == 0) continue;
      const SdkSlotRecord& rec = read.records[static_cast<std::size_t>(slot)];
      const bool first = bank_->slot_record(slot).first_step < 0 &&
                         rec.first_step == static_cast<std::int32_t>(row);
      if (!bank_->record_at(slot, ScanResult{kinds, first ? rec.count : 0, -1},
                            first ? rec.exec_position : 0))
        continue;
      first_fire_in_step_ = true;
      if (!capture_) continue;
      const RegisteredSlot& s = slots_[static_cast<std::size_t>(slot)];
      CapturedSlot c{
          slot,
          s.shape,
          on_device(call,
                    [&] { return dev_->captured(slot, static_cast<std::uint64_t>(s.count)); }),
          {},
          {}};
      if (c.values.empty()) continue;  // the copies' arena had no room left for it
      c.scan = scan_nonfinite(c.values.data(), c.values.size());
      captured_.push_back(std::move(c));
    }
    health_rows_ = health_ ? unmeasured_rows(table_->size()) : SlotHealthRows{};
    grad_norm_ = loss_ = std::numeric_limits<double>::quiet_NaN();
    if (last) {  // the device holds the last step's health and role values only
      if (health_ && !read.health.empty())
        for (std::size_t slot = 0; slot < slots_.size() && slot < read.records.size(); ++slot)
          if (checked.test(static_cast<int>(slot)))
            std::copy_n(read.health.begin() + static_cast<std::ptrdiff_t>(slot * kHealthFieldCount),
                        kHealthFieldCount, health_rows_[slot].begin());
      for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
        const RegisteredSlot& s = slots_[slot];
        if (s.role == NS_ROLE_NONE || !checked.test(static_cast<int>(slot))) continue;
        const std::uint64_t where = s.checked_at ? s.checked_at : s.address;
        const double v =
            on_device(call, [&] { return dev_->read_value(stream, where, element_type(s.dtype)); });
        (s.role == NS_ROLE_LOSS ? loss_ : grad_norm_) = v;
      }
    }
    checked_ = checked;
    update_asked_ = last && step_asked;
    bank_->end_step();
    out = finish_step();
    any.fired |= out.fired;
    any.first_fire |= out.first_fire;
  }
  out.fired = any.fired;
  out.first_fire = any.first_fire;
  out.replays = static_cast<std::int32_t>(read.steps);
  return out;
}

}  // namespace nanscope::sdk
