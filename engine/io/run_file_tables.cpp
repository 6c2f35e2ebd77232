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
  static const std::regex name(R"(dumps/fold\d{3,}_step\d{8,}_[A-Za-z0-9_.]+\.h5)");
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

void write_slot_table(hid_t f, const char* name, const std::string& path) {
  std::vector<SlotRow> rows;
  for (int i = 0; i < slot_count(); ++i) {
    const SlotInfo& s = slot_info(i);
    SlotRow row{};
    row.index = s.index;
    put(row.name, s.name);
    put(row.phase, slot_phase(s));
    put(row.buffer, s.buffer);
    row.rank = s.rank;
    row.consumers = static_cast<std::int64_t>(s.consumers);
    rows.push_back(row);
  }
  write_table(f, name, slot_row_type(), rows, path);
}

void read_trainer_slot_table(hid_t f, const char* name, const std::string& trainer,
                             const std::string& path, std::vector<TrainerSlot>* out) {
  std::vector<SlotRow> rows = read_table<SlotRow>(f, name, slot_row_type(), path, "slot table");
  if (rows.size() > static_cast<std::size_t>(kSlotCount))
    throw DataError(
        fmt::format("{}: /{} holds {} slots, more than {}", path, name, rows.size(), kSlotCount));
  std::vector<std::int64_t> consumers(rows.size());
  read_table_rows(f, name, slot_consumers_type(), consumers.data(), consumers.size(), path,
                  "slot table");
  std::vector<TrainerSlot> table;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SlotRow& row = rows[i];
    row.name[kNameLen - 1] = row.phase[kPhaseLen - 1] = row.buffer[kBufferLen - 1] = '\0';
    if (row.index != static_cast<std::int32_t>(i))
      throw DataError(fmt::format("{}: /{} row {} holds index {}", path, name, i, row.index));
    table.push_back(TrainerSlot{row.name, row.phase, row.buffer, row.rank,
                                static_cast<std::uint64_t>(consumers[i])});
  }
  if (const std::string why = use_trainer_slots(trainer, table); !why.empty())
    throw DataError(fmt::format("{}: /{} of trainer '{}': {}", path, name, trainer, why));
  if (out) *out = std::move(table);
}

}  // namespace nanscope::run_tables
