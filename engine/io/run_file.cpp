// The run file's writer (docs/files.md); the reader is run_file_read.cpp, the compound tables
// run_file_tables.cpp.
#include "io/run_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/slot_table.h"
#include "io/h5.h"
#include "io/run_file_tables.h"

namespace nanscope {

using namespace run_tables;

HealthKeeping HealthKeeping::for_table(const SlotTable& table) {
  const std::size_t row = static_cast<std::size_t>(table.size()) * sizeof(HealthRow);
  HealthKeeping k;
  k.stride = static_cast<int>((row + kHealthBytesPerStep - 1) / kHealthBytesPerStep);
  return k;
}

void write_run_file(const std::string& path, const RunFileData& r) {
  h5::AtomicFile file(path);
  const hid_t f = file.id();
  // Health kept for every step: the dense layout of schema 2; for none (health off): no
  // /steps/health, schema 2 as well; else the rows kept and their steps (schema 3).
  const auto has_health = [](const RunStepRow& s) { return !s.health.empty(); };
  const bool every_health = std::all_of(r.steps.begin(), r.steps.end(), has_health);
  const bool no_health =
      !r.steps.empty() && std::none_of(r.steps.begin(), r.steps.end(), has_health);
  const bool sparse = !every_health && !no_health;
  h5::write_attr(f, "schema_version", sparse ? kRunSchemaVersion : std::int64_t{2}, path);
  h5::write_attr(f, "nanscope_version", r.nanscope_version, path);
  h5::write_attr(f, "created_utc", r.created_utc, path);
  h5::write_attr(f, "backend", r.backend, path);
  h5::write_attr(f, "device_name", r.device_name, path);
  h5::write_attr(f, "config", r.config_toml, path);
  if (!r.scenario.empty()) h5::write_attr(f, "scenario", r.scenario, path);
  h5::write_attr(f, "seed", static_cast<std::int64_t>(r.seed), path);
  const SlotTable& table = *r.table;
  h5::write_attr(f, "trainer", table.trainer(), path);

  // Every per-slot table is as wide as the trainer's (n below).
  const int n = table.size();
  const auto width = static_cast<std::uint64_t>(n);
  write_slot_table(f, "slots", table, path);
  const auto refuse_width = [&path, n](const char* what, std::size_t got) {
    if (got != static_cast<std::size_t>(n))
      throw std::logic_error(
          fmt::format("{}: {} of {} slots for a table of {}", path, what, got, n));
  };

  {
    h5::Handle g = h5::create_group(f, "folds", path);
    const std::uint64_t nf = r.folds.size();
    std::vector<std::uint8_t> flags, state;
    std::vector<std::int64_t> first, count;
    std::vector<std::int32_t> entry;
    for (const auto& fold : r.folds) {
      refuse_width("a fold's records", fold.slots.size());
      for (int i = 0; i < n; ++i) {
        const SlotRecord& s = fold.slots[static_cast<std::size_t>(i)];
        flags.push_back(s.kinds);
        state.push_back(static_cast<std::uint8_t>(s.state));
        first.push_back(s.first_step);
        count.push_back(s.count);
      }
      entry.push_back(fold.entry_slot.value_or(-1));
    }
    const std::vector<std::uint64_t> dims = {nf, width};
    h5::write_dataset(g, "flags", flags.data(), dims, path);
    h5::write_dataset(g, "state", state.data(), dims, path);
    h5::write_dataset(g, "first_step", first.data(), dims, path);
    h5::write_dataset(g, "count", count.data(), dims, path);
    h5::write_dataset(g, "entry_slot", entry.data(), {nf}, path);
  }
  {
    h5::Handle g = h5::create_group(f, "steps", path);
    const std::uint64_t ns = r.steps.size();
    std::vector<std::uint8_t> flags, checked;
    std::vector<std::int32_t> fold, step;
    std::array<std::vector<double>, kLossTerms.size()> terms;
    std::vector<double> group_norm;
    flags.reserve(ns * width);
    checked.reserve(ns * width);
    for (const auto& row : r.steps) {
      refuse_width("a step's flags", row.flags.size());
      flags.insert(flags.end(), row.flags.begin(), row.flags.end());
      for (int s = 0; s < n; ++s) checked.push_back(row.checked.test(s) ? 1 : 0);
      fold.push_back(row.fold);
      step.push_back(row.step);
      for (std::size_t k = 0; k < kLossTerms.size(); ++k)
        terms[k].push_back(row.losses.*kLossTerms[k].member);
      group_norm.insert(group_norm.end(), row.losses.group_norm.begin(),
                        row.losses.group_norm.end());
    }
    h5::write_dataset(g, "flags", flags.data(), {ns, width}, path);
    h5::write_dataset(g, "checked", checked.data(), {ns, width}, path);
    h5::write_dataset(g, "fold", fold.data(), {ns}, path);
    h5::write_dataset(g, "step", step.data(), {ns}, path);
    for (std::size_t k = 0; k < kLossTerms.size(); ++k)
      h5::write_dataset(g, std::string(kLossTerms[k].name).c_str(), terms[k].data(), {ns}, path);
    h5::write_dataset(g, "group_norm", group_norm.data(),
                      {ns, static_cast<std::uint64_t>(kGroupCount)}, path);
    h5::write_attr_strings(g, "group_norm", "groups", {kParamGroups.begin(), kParamGroups.end()},
                           path);
    std::vector<float> health;
    std::vector<std::int64_t> health_step;  // the /steps rows whose health is kept
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const RunStepRow& row = r.steps[i];
      if (row.health.empty()) continue;
      health_step.push_back(static_cast<std::int64_t>(i));
      for (int s = 0; s < n; ++s) {
        const HealthRow& h = health_at(row.health, s);
        health.insert(health.end(), h.begin(), h.end());
      }
    }
    const std::uint64_t kept = health_step.size();
    if (sparse) h5::write_dataset(g, "health_step", health_step.data(), {kept}, path);
    if (!no_health) {
      h5::write_dataset(g, "health", health.data(),
                        {kept, width, static_cast<std::uint64_t>(kHealthFieldCount)}, path);
      h5::write_attr_strings(g, "health", "fields",
                             {kHealthFieldNames.begin(), kHealthFieldNames.end()}, path);
    }
  }
  std::vector<EventRow> events;
  for (const auto& e : r.events) {
    EventRow row{};
    row.fold = e.fold;
    row.step = e.step;
    put(row.kind, std::string(name_of(e.kind)));
    row.entry_slot = e.entry_slot;
    put(row.dump, e.dump);
    events.push_back(row);
  }
  write_table(f, "events", event_row_type(), events, path);
  std::vector<WatchRow> watches;
  for (const auto& w : r.watches) {
    WatchRow row{};
    put(row.condition, name_of(w.condition));
    row.slot = w.slot;
    row.group = w.group;
    row.fold = w.fold;
    row.step = w.step;
    row.value = w.value;
    row.threshold = w.threshold;
    watches.push_back(row);
  }
  write_table(f, "watches", watch_row_type(), watches, path);
  run_checkpoints::write(f, r, path);
  file.commit();
}

}  // namespace nanscope
