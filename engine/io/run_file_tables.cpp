#include "io/run_file_tables.h"

#include <fmt/format.h>

#include <initializer_list>
#include <regex>

#include "core/errors.h"

namespace nanscope::run_tables {
namespace {

struct Field {
  const char* name;
  std::size_t offset;
  hid_t type;
};

// A compound type of `size` bytes with these fields; every insertion checked.
h5::Handle compound(std::size_t size, std::initializer_list<Field> fields) {
  h5::Handle t(H5Tcreate(H5T_COMPOUND, size), H5Tclose);
  h5::check_id(t.id(), "run file", "making a table's row type");
  for (const Field& f : fields)
    h5::check(H5Tinsert(t, f.name, f.offset, f.type), "run file",
              std::string("adding the field ") + f.name + " to a table's row type");
  return t;
}

}  // namespace

h5::Handle slot_row_type() {
  const h5::Handle n = h5::string_type(kNameLen), p = h5::string_type(kPhaseLen),
                   b = h5::string_type(kBufferLen);
  return compound(sizeof(SlotRow), {{"index", HOFFSET(SlotRow, index), H5T_NATIVE_INT32},
                                    {"name", HOFFSET(SlotRow, name), n},
                                    {"phase", HOFFSET(SlotRow, phase), p},
                                    {"buffer", HOFFSET(SlotRow, buffer), b},
                                    {"rank", HOFFSET(SlotRow, rank), H5T_NATIVE_INT32},
                                    {"consumers", HOFFSET(SlotRow, consumers), H5T_NATIVE_INT64}});
}

h5::Handle slot_consumers_type() {
  return compound(sizeof(std::int64_t), {{"consumers", 0, H5T_NATIVE_INT64}});
}

h5::Handle event_row_type() {
  const h5::Handle k = h5::string_type(kKindLen), d = h5::string_type(kDumpLen);
  return compound(sizeof(EventRow),
                  {{"fold", HOFFSET(EventRow, fold), H5T_NATIVE_INT32},
                   {"step", HOFFSET(EventRow, step), H5T_NATIVE_INT32},
                   {"kind", HOFFSET(EventRow, kind), k},
                   {"entry_slot", HOFFSET(EventRow, entry_slot), H5T_NATIVE_INT32},
                   {"dump", HOFFSET(EventRow, dump), d}});
}

h5::Handle watch_row_type() {
  const h5::Handle c = h5::string_type(kKindLen);
  return compound(sizeof(WatchRow),
                  {{"condition", HOFFSET(WatchRow, condition), c},
                   {"slot", HOFFSET(WatchRow, slot), H5T_NATIVE_INT32},
                   {"group", HOFFSET(WatchRow, group), H5T_NATIVE_INT32},
                   {"fold", HOFFSET(WatchRow, fold), H5T_NATIVE_INT32},
                   {"step", HOFFSET(WatchRow, step), H5T_NATIVE_INT32},
                   {"value", HOFFSET(WatchRow, value), H5T_NATIVE_DOUBLE},
                   {"threshold", HOFFSET(WatchRow, threshold), H5T_NATIVE_DOUBLE}});
}

bool is_dump_name(const std::string& d) {
  static const std::regex name(R"(dumps/fold\d{3,}_step\d{8,}_[A-Za-z0-9_.\-]+\.h5)");
  return std::regex_match(d, name) && d.find("..") == std::string::npos;
}

void write_table_rows(hid_t loc, const char* name, const h5::Handle& type, const void* rows,
                      std::size_t n, const std::string& where) {
  hsize_t count = n;
  h5::Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  h5::check_id(space.id(), where, std::string("making the shape of ") + name);
  h5::Handle ds(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                H5Dclose);
  h5::check_id(ds.id(), where, std::string("creating ") + name);
  if (n)
    h5::check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), where,
              std::string("writing ") + name);
}

std::size_t table_rows(hid_t f, const char* name, std::size_t row_bytes, const std::string& path) {
  const auto dims = h5::dataset_dims(f, name, path);
  if (dims.size() != 1) throw DataError(fmt::format("{}: /{} must be one-dimensional", path, name));
  return h5::checked_count(f, name, dims, row_bytes, path);
}

void read_table_rows(hid_t f, const char* name, const h5::Handle& type, void* rows, std::size_t n,
                     const std::string& path, const char* what) {
  h5::Handle ds(H5Dopen2(f, name, H5P_DEFAULT), H5Dclose);
  h5::check_id(ds.id(), path, std::string("opening /") + name, h5::Op::Read);
  if (n && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
    throw DataError(fmt::format("{}: cannot read /{} (not the {})", path, name, what));
}

namespace {
// A table wider than a consumers column can say keeps its consumers as (slot, consumer) pairs.
std::string edges_name(const char* table) {
  return std::string(table) + "_consumers";
}
}  // namespace

void write_slot_table(hid_t f, const char* name, const SlotTable& table, const std::string& path) {
  const bool column = table.size() <= 64;
  std::vector<SlotRow> rows;
  std::vector<std::int32_t> edges;
  rows.reserve(static_cast<std::size_t>(table.size()));
  for (const SlotInfo& s : table) {
    SlotRow row{};
    row.index = s.index;
    put(row.name, s.name);
    put(row.phase, slot_phase(s));
    put(row.buffer, s.buffer);
    row.rank = s.rank;
    std::uint64_t mask = 0;
    for (int c : s.consumers) {
      if (column) mask |= std::uint64_t{1} << c;
      edges.insert(edges.end(), {s.index, c});
    }
    row.consumers = static_cast<std::int64_t>(mask);
    rows.push_back(row);
  }
  write_table(f, name, slot_row_type(), rows, path);
  if (!column) h5::write_dataset(f, edges_name(name), edges.data(), {edges.size() / 2, 2}, path);
}

SlotTableRef read_trainer_slot_table(hid_t f, const char* name, const std::string& trainer,
                                     const std::string& path) {
  const std::size_t n = table_rows(f, name, sizeof(SlotRow), path);
  if (n > static_cast<std::size_t>(kMaxSlots))
    throw DataError(fmt::format("{}: /{} holds {} slots, more than {}", path, name, n, kMaxSlots));
  std::vector<SlotRow> rows(n);
  read_table_rows(f, name, slot_row_type(), rows.data(), n, path, "slot table");
  std::vector<TrainerSlot> slots;
  slots.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    SlotRow& row = rows[i];
    row.name[kNameLen - 1] = row.phase[kPhaseLen - 1] = row.buffer[kBufferLen - 1] = '\0';
    if (row.index != static_cast<std::int32_t>(i))
      throw DataError(fmt::format("{}: /{} row {} holds index {}", path, name, i, row.index));
    slots.push_back(TrainerSlot{row.name, row.phase, row.buffer, row.rank, {}});
  }
  const std::string edges = edges_name(name);
  if (h5::exists(f, edges)) {
    std::vector<std::uint64_t> dims;
    const auto pairs = h5::read_dataset<std::int32_t>(f, edges, &dims, path);
    if (dims.size() != 2 || dims[1] != 2)
      throw DataError(fmt::format("{}: /{} is not a list of (slot, consumer) pairs", path, edges));
    for (std::size_t k = 0; k + 1 < pairs.size(); k += 2) {
      const std::int32_t from = pairs[k], to = pairs[k + 1];
      if (from < 0 || static_cast<std::size_t>(from) >= n || to < 0 ||
          static_cast<std::size_t>(to) >= n)
        throw DataError(fmt::format("{}: /{} row {} names a slot outside the table ({}, {})", path,
                                    edges, k / 2, from, to));
      slots[static_cast<std::size_t>(from)].consumers.push_back(to);
    }
  } else {
    std::vector<std::int64_t> consumers(n);
    read_table_rows(f, name, slot_consumers_type(), consumers.data(), n, path, "slot table");
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < 64; ++c)
        if (static_cast<std::uint64_t>(consumers[i]) >> c & 1) slots[i].consumers.push_back(c);
  }
  std::string why;
  SlotTableRef table = SlotTable::of_trainer(trainer, slots, &why);
  if (!table) throw DataError(fmt::format("{}: /{} of trainer '{}': {}", path, name, trainer, why));
  return table;
}

SlotTableRef read_slot_table(hid_t f, const char* name, const std::string& trainer,
                             const std::string& path) {
  return trainer == "nanscope" ? SlotTable::builtin()
                               : read_trainer_slot_table(f, name, trainer, path);
}

}  // namespace nanscope::run_tables
