// The run file's reader, one function per table (docs/files.md): every table checked against the
// ones before it (the steps against /folds, the events and watches against the steps), so a file
// that contradicts itself is refused naming the table, row and field.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "core/errors.h"
#include "core/slot_table.h"
#include "io/h5.h"
#include "io/run_file.h"
#include "io/run_file_tables.h"

namespace nanscope {

using namespace run_tables;

namespace {

void read_root(hid_t f, const std::string& path, RunFileData& r) {
  r.nanscope_version = h5::read_attr_string(f, "nanscope_version", path);
  r.created_utc = h5::read_attr_string(f, "created_utc", path);
  r.backend = h5::read_attr_string(f, "backend", path);
  r.device_name = h5::read_attr_string(f, "device_name", path);
  r.config_toml = h5::read_attr_string(f, "config", path);
  if (h5::has_attr(f, "scenario")) {
    r.scenario = h5::read_attr_string(f, "scenario", path);
    // A preset's name: at most 64 letters, digits, '-' and '_' (what the workbench puts in its
    // scenario box and status bar).
    const bool name_like = !r.scenario.empty() && r.scenario.size() <= 64 &&
                           std::all_of(r.scenario.begin(), r.scenario.end(), [](unsigned char c) {
                             return std::isalnum(c) || c == '-' || c == '_';
                           });
    if (!name_like)
      throw DataError(fmt::format(
          "{}: root attribute 'scenario' is not a scenario name (1-64 letters, digits, '-', '_')",
          path));
  }
  r.seed = static_cast<std::uint64_t>(h5::read_attr_int(f, "seed", path));
}

// The trainer's table (nanscope's own for nanscope's files, /slots for another's): the tables
// after it are as wide as it.
void read_slots(hid_t f, const std::string& path, RunFileData& r) {
  const std::string trainer =
      h5::has_attr(f, "trainer") ? h5::read_attr_string(f, "trainer", path) : "nanscope";
  r.table = read_slot_table(f, "slots", trainer, path);
}

// The slots the file holds: its table's, or, in a file of nanscope's own written before its last
// slots were added (nanscope 0.1.0's 36 on), that many: the slots past them did not exist in that
// run, and the readers give them as absent, never checked and unmeasured.
std::size_t stored_width(hid_t f, const std::string& path, const SlotTable& table) {
  const auto n = static_cast<std::size_t>(table.size());
  if (!table.is_builtin()) return n;
  const std::vector<std::uint64_t> dims = h5::dataset_dims(f, "folds/flags", path);
  constexpr std::size_t kOldestBuiltinWidth = 36;  // nanscope 0.1.0's own table
  if (dims.size() != 2 || dims[1] < kOldestBuiltinWidth || dims[1] >= n) return n;
  // Such a file's /slots, where it has one, lists as many slots.
  if (h5::exists(f, "slots")) {
    const std::vector<std::uint64_t> rows = h5::dataset_dims(f, "slots", path);
    if (rows.size() != 1 || rows[0] != dims[1])
      throw DataError(fmt::format("{}: /slots lists {} slots but /folds/flags holds {}", path,
                                  rows.empty() ? 0 : rows[0], dims[1]));
  }
  return static_cast<std::size_t>(dims[1]);
}

void read_folds(hid_t f, const std::string& path, RunFileData& r) {
  std::vector<std::uint64_t> dims;
  const std::size_t width = static_cast<std::size_t>(r.table->size());
  const std::size_t n = stored_width(f, path, *r.table);
  r.stored_slots = static_cast<int>(n);
  auto flags = h5::read_dataset<std::uint8_t>(f, "folds/flags", &dims, path);
  if (dims.size() != 2 || dims[1] != n)
    throw DataError(fmt::format("{}: /folds/flags must be [folds, {}]", path, n));
  const std::size_t nf = dims[0];
  auto state = h5::read_dataset<std::uint8_t>(f, "folds/state", &dims, path);
  auto first = h5::read_dataset<std::int64_t>(f, "folds/first_step", &dims, path);
  auto count = h5::read_dataset<std::int64_t>(f, "folds/count", &dims, path);
  auto entry = h5::read_dataset<std::int32_t>(f, "folds/entry_slot", &dims, path);
  if (state.size() != nf * n || first.size() != nf * n || count.size() != nf * n ||
      entry.size() != nf)
    throw DataError(fmt::format("{}: the /folds datasets disagree in size", path));
  for (std::size_t k = 0; k < nf; ++k) {
    FoldFlags fold;
    fold.fold = static_cast<int>(k);
    fold.slots.resize(n);
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t i = k * n + s;
      if (state[i] >= kSlotStateCount)
        throw DataError(fmt::format("{}: /folds/state holds an unknown code {}", path, state[i]));
      fold.slots[s] =
          SlotRecord{static_cast<SlotState>(state[i]), flags[i], first[i], count[i], -1};
    }
    fold.slots.resize(width, SlotRecord{SlotState::Absent, 0, -1, 0, -1});
    derive_entries(*r.table, fold);
    if (entry[k] != fold.entry_slot.value_or(-1))
      throw DataError(
          fmt::format("{}: /folds/entry_slot of fold {} ({}) disagrees with the fold's flags", path,
                      k, entry[k]));
    r.folds.push_back(fold);
  }
}

void read_steps(hid_t f, const std::string& path, RunFileData& r) {
  std::vector<std::uint64_t> dims;
  const std::size_t width = static_cast<std::size_t>(r.table->size());
  const std::size_t n = stored_width(f, path, *r.table);
  const std::size_t nf = r.folds.size();
  auto sflags = h5::read_dataset<std::uint8_t>(f, "steps/flags", &dims, path);
  const std::size_t ns = dims.empty() ? 0 : dims[0];
  auto sfold = h5::read_dataset<std::int32_t>(f, "steps/fold", nullptr, path);
  auto sstep = h5::read_dataset<std::int32_t>(f, "steps/step", nullptr, path);
  if (sflags.size() != ns * n || sfold.size() != ns || sstep.size() != ns)
    throw DataError(fmt::format("{}: the /steps datasets disagree in size", path));
  // The loss terms (the total loss and the norm in every file; the terms, the per-group norms and
  // the per-step checked slots where the file has them: older files do not).
  std::array<std::vector<double>, kLossTerms.size()> term;
  for (std::size_t k = 0; k < kLossTerms.size(); ++k) {
    const std::string name = "steps/" + std::string(kLossTerms[k].name);
    const bool required = kLossTerms[k].member == &StepLosses::total || k == kGradNormTerm;
    if (!required && !h5::exists(f, name)) continue;
    term[k] = h5::read_dataset<double>(f, name, nullptr, path);
    if (term[k].size() != ns)
      throw DataError(fmt::format("{}: /{} disagrees in size with /steps/flags", path, name));
  }
  std::vector<double> group_norm;
  if (h5::exists(f, "steps/group_norm")) {
    group_norm = h5::read_dataset<double>(f, "steps/group_norm", &dims, path);
    if (dims.size() != 2 || dims[0] != ns || dims[1] != static_cast<std::uint64_t>(kGroupCount))
      throw DataError(fmt::format("{}: /steps/group_norm must be [steps, {}]", path, kGroupCount));
  }
  std::vector<std::uint8_t> checked;
  if (h5::exists(f, "steps/checked")) {
    checked = h5::read_dataset<std::uint8_t>(f, "steps/checked", nullptr, path);
    if (checked.size() != ns * n)
      throw DataError(fmt::format("{}: /steps/checked disagrees in size", path));
  }
  // Each /steps row's row of /steps/health, or -1: every row's (schema 2), the rows
  // /steps/health_step lists (schema 3), none (schema 1).
  std::vector<float> health;
  std::size_t fields = kHealthFieldCount;  // of each health row in the file
  std::vector<std::int64_t> health_row(ns, -1);
  if (h5::exists(f, "steps/health")) {
    health = h5::read_dataset<float>(f, "steps/health", &dims, path);
    std::vector<std::int64_t> kept;
    if (h5::exists(f, "steps/health_step")) {
      kept = h5::read_dataset<std::int64_t>(f, "steps/health_step", nullptr, path);
    } else {
      kept.resize(ns);
      for (std::size_t i = 0; i < ns; ++i) kept[i] = static_cast<std::int64_t>(i);
    }
    // Files written before the reduced types' fields hold the first kHealthFieldCountV3.
    if (dims.size() != 3 || dims[0] != kept.size() || dims[1] != n ||
        (dims[2] != kHealthFieldCount && dims[2] != kHealthFieldCountV3))
      throw DataError(fmt::format("{}: /steps/health must be [{} kept steps, {}, {} or {}]", path,
                                  kept.size(), n, kHealthFieldCount, kHealthFieldCountV3));
    fields = dims[2];
    r.health_fields = static_cast<int>(fields);
    for (std::size_t k = 0; k < kept.size(); ++k) {
      const bool ascending = k == 0 || kept[k] > kept[k - 1];
      if (kept[k] < 0 || static_cast<std::uint64_t>(kept[k]) >= ns || !ascending)
        throw DataError(fmt::format(
            "{}: /steps/health_step row {} ({}) is not a later row of /steps", path, k, kept[k]));
      health_row[static_cast<std::size_t>(kept[k])] = static_cast<std::int64_t>(k);
    }
  }
  if (ns > 0 && nf == 0)
    throw DataError(fmt::format("{}: /steps holds {} steps but /folds no fold", path, ns));
  for (std::size_t i = 0; i < ns; ++i) {
    // Steps come fold by fold, each fold's from 0 on: the grids and the events index with them.
    const bool next_in_fold = i > 0 && sfold[i] == sfold[i - 1] && sstep[i] == sstep[i - 1] + 1;
    const bool new_fold = sstep[i] == 0 && (i == 0 || sfold[i] > sfold[i - 1]);
    if (sfold[i] < 0 || static_cast<std::size_t>(sfold[i]) >= nf || !(next_in_fold || new_fold))
      throw DataError(
          fmt::format("{}: /steps row {} (fold {}, step {}) does not follow on from the row before "
                      "or names no fold of /folds",
                      path, i, sfold[i], sstep[i]));
  }
  for (std::size_t i = 0; i < ns; ++i) {
    RunStepRow row;
    row.fold = sfold[i];
    row.step = sstep[i];
    row.flags.assign(sflags.begin() + static_cast<std::ptrdiff_t>(i * n),
                     sflags.begin() + static_cast<std::ptrdiff_t>((i + 1) * n));
    row.flags.resize(width, 0);
    row.checked = SlotSet(static_cast<int>(width));
    const std::int64_t hrow = health_row[i];
    if (hrow >= 0) {
      const auto from = static_cast<std::size_t>(hrow) * n * fields;
      row.health = unmeasured_rows(static_cast<int>(width));
      for (std::size_t s = 0; s < n; ++s)
        std::copy_n(health.begin() + static_cast<std::ptrdiff_t>(from + s * fields), fields,
                    row.health[s].begin());
    }
    for (std::size_t k = 0; k < kLossTerms.size(); ++k)
      if (!term[k].empty()) row.losses.*kLossTerms[k].member = term[k][i];
    for (std::size_t g = 0; g < static_cast<std::size_t>(kGroupCount); ++g)
      row.losses.group_norm[g] = group_norm.empty()
                                     ? std::numeric_limits<double>::quiet_NaN()
                                     : group_norm[i * static_cast<std::size_t>(kGroupCount) + g];
    const bool known_fold = row.fold >= 0 && static_cast<std::size_t>(row.fold) < r.folds.size();
    for (std::size_t s = 0; s < n; ++s) {
      // Without /steps/checked: a slot was checked when its fold's state is clean or fired.
      const bool on =
          !checked.empty()
              ? checked[i * n + s] != 0
              : known_fold && (r.folds[static_cast<std::size_t>(row.fold)].slots[s].state ==
                                   SlotState::Clean ||
                               r.folds[static_cast<std::size_t>(row.fold)].slots[s].state ==
                                   SlotState::Fired);
      if (on) row.checked.set(static_cast<int>(s));
    }
    r.steps.push_back(std::move(row));
  }
}

// The steps each fold ran, so that an event or a watch names a step that happened.
std::vector<int> steps_per_fold(const RunFileData& r) {
  std::vector<int> fold_steps(r.folds.size(), 0);
  for (const RunStepRow& s : r.steps) fold_steps[static_cast<std::size_t>(s.fold)] = s.step + 1;
  return fold_steps;
}

// "" when (fold, step) is a step the run took, else what is wrong with it.
std::string step_taken(int fold, int step, const std::vector<int>& fold_steps) {
  if (fold < 0 || static_cast<std::size_t>(fold) >= fold_steps.size())
    return fmt::format("fold {} is not in /folds", fold);
  if (step < 0 || step >= fold_steps[static_cast<std::size_t>(fold)])
    return fmt::format("step {} is not a step of fold {}", step, fold);
  return {};
}

void read_events(hid_t f, const std::string& path, const std::vector<int>& fold_steps,
                 RunFileData& r) {
  if (!h5::exists(f, "events")) return;
  {
    std::vector<EventRow> rows =
        read_table<EventRow>(f, "events", event_row_type(), path, "event table");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EventRow& e = rows[i];
      e.kind[kKindLen - 1] = e.dump[kDumpLen - 1] = '\0';  // whatever the file holds, a C string
      auto bad = [&](const std::string& what) {
        return DataError(fmt::format("{}: /events row {}: {}", path, i, what));
      };
      const auto kind = parse_enum<EventKind>(e.kind);
      if (!kind) throw bad(fmt::format("unknown kind '{}'", e.kind));
      const RunEventRow row{e.fold, e.step, *kind, e.entry_slot, e.dump, std::nullopt};
      if (const std::string why = step_taken(row.fold, row.step, fold_steps); !why.empty())
        throw bad(why);
      if (row.entry_slot < -1 || row.entry_slot >= r.stored_slots)
        throw bad(fmt::format("entry_slot {} is not a slot", row.entry_slot));
      if (!row.dump.empty() && !is_dump_name(row.dump))
        throw bad(fmt::format(
            "dump '{}' is not a dump of this run (dumps/fold..._step..._<slot>.h5)", row.dump));
      r.events.push_back(row);
    }
  }
}

void read_watches(hid_t f, const std::string& path, const std::vector<int>& fold_steps,
                  RunFileData& r) {
  if (!h5::exists(f, "watches")) return;
  {
    std::vector<WatchRow> rows =
        read_table<WatchRow>(f, "watches", watch_row_type(), path, "watch table");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      WatchRow& w = rows[i];
      w.condition[kKindLen - 1] = '\0';
      auto bad = [&](const std::string& what) {
        return DataError(fmt::format("{}: /watches row {}: {}", path, i, what));
      };
      const auto condition = parse_enum<WatchCondition>(w.condition);
      if (!condition) throw bad(fmt::format("unknown condition '{}'", w.condition));
      if (const std::string why = step_taken(w.fold, w.step, fold_steps); !why.empty())
        throw bad(why);
      if (w.slot < -1 || w.slot >= r.stored_slots)
        throw bad(fmt::format("slot {} is not a slot", w.slot));
      if (w.group < -1 || w.group >= kGroupCount)
        throw bad(fmt::format("group {} is not a parameter group", w.group));
      r.watches.push_back(
          WatchTrip{*condition, w.slot, w.group, w.fold, w.step, w.value, w.threshold});
    }
  }
}

void pair_watches(RunFileData& r) {
  // The session writes a watch event and its /watches row together, so the k-th watch event is
  // the k-th trip; a file whose two tables disagree there keeps the event without its trip.
  std::size_t trips = 0;
  for (RunEventRow& e : r.events) {
    if (e.kind != EventKind::Watch || trips == r.watches.size()) continue;
    const WatchTrip& t = r.watches[trips++];
    if (t.fold == e.fold && t.step == e.step && t.slot == e.entry_slot) e.watch = t;
  }
}

// Each fold's step count from /steps/fold and /steps/step alone (the outline reads no more).
std::vector<int> steps_per_fold_of_file(hid_t f, const std::string& path, std::size_t folds) {
  const auto fold = h5::read_dataset<std::int32_t>(f, "steps/fold", nullptr, path);
  const auto step = h5::read_dataset<std::int32_t>(f, "steps/step", nullptr, path);
  if (fold.size() != step.size())
    throw DataError(fmt::format("{}: the /steps datasets disagree in size", path));
  std::vector<int> fold_steps(folds, 0);
  for (std::size_t i = 0; i < fold.size(); ++i) {
    if (fold[i] < 0 || static_cast<std::size_t>(fold[i]) >= folds)
      throw DataError(
          fmt::format("{}: /steps/fold row {}: fold {} is not in /folds", path, i, fold[i]));
    if (step[i] < 0 || step[i] == std::numeric_limits<std::int32_t>::max())
      throw DataError(
          fmt::format("{}: /steps/step row {}: step {} is not a step", path, i, step[i]));
    fold_steps[static_cast<std::size_t>(fold[i])] = step[i] + 1;
  }
  return fold_steps;
}

}  // namespace

// The part both readers start with: the schema, the root attributes and /folds.
static RunFileData read_head(hid_t f, const std::string& path) {
  h5::check_schema(f, path, "run file", {"folds", "steps"}, kRunSchemaVersion);
  RunFileData r;
  read_root(f, path, r);
  read_slots(f, path, r);
  read_folds(f, path, r);
  return r;
}

RunFileData read_run_file_outline(const std::string& path) {
  h5::Handle file = h5::open_read(path);
  const hid_t f = file.id();
  RunFileData r = read_head(f, path);
  const std::vector<int> fold_steps = steps_per_fold_of_file(f, path, r.folds.size());
  read_events(f, path, fold_steps, r);
  read_watches(f, path, fold_steps, r);
  pair_watches(r);
  return r;
}

RunFileData read_run_file(const std::string& path) {
  h5::Handle file = h5::open_read(path);
  const hid_t f = file.id();
  RunFileData r = read_head(f, path);
  read_steps(f, path, r);
  const std::vector<int> fold_steps = steps_per_fold(r);
  read_events(f, path, fold_steps, r);
  read_watches(f, path, fold_steps, r);
  pair_watches(r);
  run_checkpoints::read_positions(f, path, r);
  return r;
}

}  // namespace nanscope
