#include "io/run_file.h"

#include <fmt/format.h>

#include <regex>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/errors.h"
#include "core/slot_table.h"
#include "io/dump_file.h"
#include "io/h5.h"

namespace nanscope {
namespace {

constexpr std::size_t kNameLen = 32, kPhaseLen = 32, kBufferLen = 128, kKindLen = 32,
                      kDumpLen = 256;

struct SlotRow {
  std::int32_t index;
  char name[kNameLen];
  char phase[kPhaseLen];
  char buffer[kBufferLen];
  std::int32_t rank;
};

struct EventRow {
  std::int32_t fold, step;
  char kind[kKindLen];
  std::int32_t entry_slot;
  char dump[kDumpLen];
};

struct WatchRow {
  char condition[kKindLen];
  std::int32_t slot, group, fold, step;
  double value, threshold;
};

// dumps/fold{F:03}_step{S:08}_{slot name}.h5, and nothing else (no other directory, no "..").
bool is_dump_name(const std::string& d) {
  static const std::regex name(R"(dumps/fold\d{3,}_step\d{8,}_[A-Za-z0-9_.]+\.h5)");
  return std::regex_match(d, name) && d.find("..") == std::string::npos;
}

template <std::size_t N>
void put(char (&dst)[N], std::string_view s) {
  std::memset(dst, 0, N);
  std::memcpy(dst, s.data(), std::min(s.size(), N - 1));
}

h5::Handle slot_row_type() {
  h5::Handle t(H5Tcreate(H5T_COMPOUND, sizeof(SlotRow)), H5Tclose);
  h5::Handle n = h5::string_type(kNameLen), p = h5::string_type(kPhaseLen),
             b = h5::string_type(kBufferLen);
  H5Tinsert(t, "index", HOFFSET(SlotRow, index), H5T_NATIVE_INT32);
  H5Tinsert(t, "name", HOFFSET(SlotRow, name), n);
  H5Tinsert(t, "phase", HOFFSET(SlotRow, phase), p);
  H5Tinsert(t, "buffer", HOFFSET(SlotRow, buffer), b);
  H5Tinsert(t, "rank", HOFFSET(SlotRow, rank), H5T_NATIVE_INT32);
  return t;
}

h5::Handle event_row_type() {
  h5::Handle t(H5Tcreate(H5T_COMPOUND, sizeof(EventRow)), H5Tclose);
  h5::Handle k = h5::string_type(kKindLen), d = h5::string_type(kDumpLen);
  H5Tinsert(t, "fold", HOFFSET(EventRow, fold), H5T_NATIVE_INT32);
  H5Tinsert(t, "step", HOFFSET(EventRow, step), H5T_NATIVE_INT32);
  H5Tinsert(t, "kind", HOFFSET(EventRow, kind), k);
  H5Tinsert(t, "entry_slot", HOFFSET(EventRow, entry_slot), H5T_NATIVE_INT32);
  H5Tinsert(t, "dump", HOFFSET(EventRow, dump), d);
  return t;
}

h5::Handle watch_row_type() {
  h5::Handle t(H5Tcreate(H5T_COMPOUND, sizeof(WatchRow)), H5Tclose);
  h5::Handle c = h5::string_type(kKindLen);
  H5Tinsert(t, "condition", HOFFSET(WatchRow, condition), c);
  H5Tinsert(t, "slot", HOFFSET(WatchRow, slot), H5T_NATIVE_INT32);
  H5Tinsert(t, "group", HOFFSET(WatchRow, group), H5T_NATIVE_INT32);
  H5Tinsert(t, "fold", HOFFSET(WatchRow, fold), H5T_NATIVE_INT32);
  H5Tinsert(t, "step", HOFFSET(WatchRow, step), H5T_NATIVE_INT32);
  H5Tinsert(t, "value", HOFFSET(WatchRow, value), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "threshold", HOFFSET(WatchRow, threshold), H5T_NATIVE_DOUBLE);
  return t;
}

template <class Row>
void write_table(hid_t loc, const char* name, const h5::Handle& type, const std::vector<Row>& rows,
                 const std::string& where) {
  hsize_t n = rows.size();
  h5::Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  h5::Handle ds(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                H5Dclose);
  h5::check(ds.id(), where, std::string("creating ") + name);
  if (n)
    h5::check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), where,
              std::string("writing ") + name);
}

// A one-dimensional compound table of the run file, read as `Row`s (`what` names it in errors).
template <class Row>
std::vector<Row> read_table(hid_t f, const char* name, const h5::Handle& type,
                            const std::string& path, const char* what) {
  const std::string at = std::string("/") + name;
  const auto dims = h5::dataset_dims(f, name, path);
  if (dims.size() != 1) throw DataError(fmt::format("{}: {} must be one-dimensional", path, at));
  const std::size_t n = h5::checked_count(f, name, dims, sizeof(Row), path);
  h5::Handle ds(H5Dopen2(f, name, H5P_DEFAULT), H5Dclose);
  h5::check_read(ds.id(), path, "opening " + at);
  std::vector<Row> rows(n);
  if (n && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) < 0)
    throw DataError(fmt::format("{}: cannot read {} (not the {})", path, at, what));
  return rows;
}

}  // namespace

void write_run_file(const std::string& path, const RunFileData& r) {
  h5::AtomicFile file(path);
  const hid_t f = file.id();
  h5::write_attr(f, "schema_version", kRunSchemaVersion, path);
  h5::write_attr(f, "nanscope_version", r.nanscope_version, path);
  h5::write_attr(f, "created_utc", r.created_utc, path);
  h5::write_attr(f, "backend", r.backend, path);
  h5::write_attr(f, "device_name", r.device_name, path);
  h5::write_attr(f, "config", r.config_toml, path);
  if (!r.scenario.empty()) h5::write_attr(f, "scenario", r.scenario, path);
  h5::write_attr(f, "seed", static_cast<std::int64_t>(r.seed), path);

  std::vector<SlotRow> slots;
  for (const auto& s : slot_table()) {
    SlotRow row{};
    row.index = s.index;
    put(row.name, s.name);
    put(row.phase, phase_name(s.phase));
    put(row.buffer, s.buffer);
    row.rank = s.rank;
    slots.push_back(row);
  }
  write_table(f, "slots", slot_row_type(), slots, path);

  {
    h5::Handle g = h5::create_group(f, "folds", path);
    const std::uint64_t nf = r.folds.size();
    std::vector<std::uint8_t> flags, state;
    std::vector<std::int64_t> first, count;
    std::vector<std::int32_t> entry;
    for (const auto& fold : r.folds) {
      for (const auto& s : fold.slots) {
        flags.push_back(s.kinds);
        state.push_back(static_cast<std::uint8_t>(s.state));
        first.push_back(s.first_step);
        count.push_back(s.count);
      }
      entry.push_back(fold.entry_slot.value_or(-1));
    }
    const std::vector<std::uint64_t> dims = {nf, static_cast<std::uint64_t>(kSlotCount)};
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
    std::vector<std::vector<double>> metrics(8);
    for (const auto& row : r.steps) {
      flags.insert(flags.end(), row.flags.begin(), row.flags.end());
      for (int s = 0; s < kSlotCount; ++s)
        checked.push_back(static_cast<std::uint8_t>(row.checked >> s & 1));
      fold.push_back(row.fold);
      step.push_back(row.step);
      const double m[8] = {row.loss, row.grad_norm, row.c51, row.mse,
                           row.cql,  row.iqn,       row.aux, row.ens};
      for (int k = 0; k < 8; ++k) metrics[k].push_back(m[k]);
    }
    h5::write_dataset(g, "flags", flags.data(), {ns, static_cast<std::uint64_t>(kSlotCount)}, path);
    h5::write_dataset(g, "checked", checked.data(), {ns, static_cast<std::uint64_t>(kSlotCount)},
                      path);
    h5::write_dataset(g, "fold", fold.data(), {ns}, path);
    h5::write_dataset(g, "step", step.data(), {ns}, path);
    const char* names[8] = {"loss", "grad_norm", "c51", "mse", "cql", "iqn", "aux", "ens"};
    for (int k = 0; k < 8; ++k) h5::write_dataset(g, names[k], metrics[k].data(), {ns}, path);
    std::vector<float> health;
    health.reserve(ns * kSlotCount * kHealthFieldCount);
    for (const auto& row : r.steps)
      for (const HealthRow& h : row.health) health.insert(health.end(), h.begin(), h.end());
    h5::write_dataset(
        g, "health", health.data(),
        {ns, static_cast<std::uint64_t>(kSlotCount), static_cast<std::uint64_t>(kHealthFieldCount)},
        path);
    h5::write_attr_strings(g, "health", "fields",
                           {kHealthFieldNames.begin(), kHealthFieldNames.end()}, path);
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
  file.commit();
}

RunFileData read_run_file(const std::string& path) {
  h5::Handle file = h5::open_read(path);
  const hid_t f = file.id();
  h5::check_schema(f, path, "run file", {"folds", "steps"}, kRunSchemaVersion);
  RunFileData r;
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

  std::vector<std::uint64_t> dims;
  auto flags = h5::read_dataset<std::uint8_t>(f, "folds/flags", &dims, path);
  if (dims.size() != 2 || dims[1] != kSlotCount)
    throw DataError(fmt::format("{}: /folds/flags must be [folds, {}]", path, kSlotCount));
  const std::size_t nf = dims[0];
  auto state = h5::read_dataset<std::uint8_t>(f, "folds/state", &dims, path);
  auto first = h5::read_dataset<std::int64_t>(f, "folds/first_step", &dims, path);
  auto count = h5::read_dataset<std::int64_t>(f, "folds/count", &dims, path);
  auto entry = h5::read_dataset<std::int32_t>(f, "folds/entry_slot", &dims, path);
  if (state.size() != nf * kSlotCount || first.size() != nf * kSlotCount ||
      count.size() != nf * kSlotCount || entry.size() != nf)
    throw DataError(fmt::format("{}: the /folds datasets disagree in size", path));
  for (std::size_t k = 0; k < nf; ++k) {
    FoldFlags fold;
    fold.fold = static_cast<int>(k);
    for (int s = 0; s < kSlotCount; ++s) {
      const std::size_t i = k * kSlotCount + static_cast<std::size_t>(s);
      if (state[i] > 4)
        throw DataError(fmt::format("{}: /folds/state holds an unknown code {}", path, state[i]));
      fold.slots[s] =
          SlotRecord{static_cast<SlotState>(state[i]), flags[i], first[i], count[i], -1};
    }
    derive_entries(fold);
    if (entry[k] != fold.entry_slot.value_or(-1))
      throw DataError(
          fmt::format("{}: /folds/entry_slot of fold {} ({}) disagrees with the fold's flags", path,
                      k, entry[k]));
    r.folds.push_back(fold);
  }
  auto sflags = h5::read_dataset<std::uint8_t>(f, "steps/flags", &dims, path);
  const std::size_t ns = dims.empty() ? 0 : dims[0];
  auto sfold = h5::read_dataset<std::int32_t>(f, "steps/fold", nullptr, path);
  auto sstep = h5::read_dataset<std::int32_t>(f, "steps/step", nullptr, path);
  auto loss = h5::read_dataset<double>(f, "steps/loss", nullptr, path);
  auto gn = h5::read_dataset<double>(f, "steps/grad_norm", nullptr, path);
  if (sflags.size() != ns * kSlotCount || sfold.size() != ns || sstep.size() != ns ||
      loss.size() != ns || gn.size() != ns)
    throw DataError(fmt::format("{}: the /steps datasets disagree in size", path));
  // The loss terms and the per-step checked slots, where the file has them (older files do not).
  const char* terms[6] = {"c51", "mse", "cql", "iqn", "aux", "ens"};
  std::vector<double> term[6];
  for (int k = 0; k < 6; ++k)
    if (h5::exists(f, std::string("steps/") + terms[k])) {
      term[k] = h5::read_dataset<double>(f, std::string("steps/") + terms[k], nullptr, path);
      if (term[k].size() != ns)
        throw DataError(fmt::format("{}: /steps/{} disagrees in size", path, terms[k]));
    }
  std::vector<std::uint8_t> checked;
  if (h5::exists(f, "steps/checked")) {
    checked = h5::read_dataset<std::uint8_t>(f, "steps/checked", nullptr, path);
    if (checked.size() != ns * kSlotCount)
      throw DataError(fmt::format("{}: /steps/checked disagrees in size", path));
  }
  std::vector<float> health;
  if (h5::exists(f, "steps/health")) {
    health = h5::read_dataset<float>(f, "steps/health", &dims, path);
    if (dims.size() != 3 || dims[0] != ns || dims[1] != kSlotCount || dims[2] != kHealthFieldCount)
      throw DataError(fmt::format("{}: /steps/health must be [steps, {}, {}]", path, kSlotCount,
                                  kHealthFieldCount));
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
    std::copy_n(sflags.begin() + static_cast<std::ptrdiff_t>(i * kSlotCount), kSlotCount,
                row.flags.begin());
    row.loss = loss[i];
    row.grad_norm = gn[i];
    double* dst[6] = {&row.c51, &row.mse, &row.cql, &row.iqn, &row.aux, &row.ens};
    for (int k = 0; k < 6; ++k)
      if (!term[k].empty()) *dst[k] = term[k][i];
    const bool known_fold = row.fold >= 0 && static_cast<std::size_t>(row.fold) < r.folds.size();
    for (int s = 0; s < kSlotCount; ++s) {
      // Without /steps/checked: a slot was checked when its fold's state is clean or fired.
      const bool on =
          !checked.empty()
              ? checked[i * kSlotCount + static_cast<std::size_t>(s)] != 0
              : known_fold && (r.folds[static_cast<std::size_t>(row.fold)].slots[s].state ==
                                   SlotState::Clean ||
                               r.folds[static_cast<std::size_t>(row.fold)].slots[s].state ==
                                   SlotState::Fired);
      if (on) row.checked |= std::uint64_t{1} << s;
      if (!health.empty())
        std::copy_n(health.begin() +
                        static_cast<std::ptrdiff_t>((i * kSlotCount + static_cast<std::size_t>(s)) *
                                                    kHealthFieldCount),
                    kHealthFieldCount, row.health[static_cast<std::size_t>(s)].begin());
    }
    r.steps.push_back(row);
  }
  // The steps each fold ran, so that an event or a watch names a step that happened.
  std::vector<int> fold_steps(nf, 0);
  for (std::size_t i = 0; i < ns; ++i)
    fold_steps[static_cast<std::size_t>(sfold[i])] = sstep[i] + 1;
  if (h5::exists(f, "events")) {
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
      if (row.fold < 0 || static_cast<std::size_t>(row.fold) >= nf)
        throw bad(fmt::format("fold {} is not in /folds", row.fold));
      if (row.step < 0 || row.step >= fold_steps[static_cast<std::size_t>(row.fold)])
        throw bad(fmt::format("step {} is not a step of fold {}", row.step, row.fold));
      if (row.entry_slot < -1 || row.entry_slot >= kSlotCount)
        throw bad(fmt::format("entry_slot {} is not a slot", row.entry_slot));
      if (!row.dump.empty() && !is_dump_name(row.dump))
        throw bad(fmt::format(
            "dump '{}' is not a dump of this run (dumps/fold..._step..._<slot>.h5)", row.dump));
      r.events.push_back(row);
    }
  }
  if (h5::exists(f, "watches")) {
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
      if (w.fold < 0 || static_cast<std::size_t>(w.fold) >= nf)
        throw bad(fmt::format("fold {} is not in /folds", w.fold));
      if (w.step < 0 || w.step >= fold_steps[static_cast<std::size_t>(w.fold)])
        throw bad(fmt::format("step {} is not a step of fold {}", w.step, w.fold));
      if (w.slot < -1 || w.slot >= kSlotCount)
        throw bad(fmt::format("slot {} is not a slot", w.slot));
      if (w.group < -1 || w.group >= kGroupCount)
        throw bad(fmt::format("group {} is not a parameter group", w.group));
      r.watches.push_back(
          WatchTrip{*condition, w.slot, w.group, w.fold, w.step, w.value, w.threshold});
    }
  }
  // The session writes a watch event and its /watches row together, so the k-th watch event is
  // the k-th trip; a file whose two tables disagree there keeps the event without its trip.
  std::size_t trips = 0;
  for (RunEventRow& e : r.events) {
    if (e.kind != EventKind::Watch || trips == r.watches.size()) continue;
    const WatchTrip& t = r.watches[trips++];
    if (t.fold == e.fold && t.step == e.step && t.slot == e.entry_slot) e.watch = t;
  }
  return r;
}

}  // namespace nanscope
