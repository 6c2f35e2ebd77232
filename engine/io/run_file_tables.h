// The run file's compound tables (/slots, /events, /watches): their row layouts and HDF5 types,
// written and read through one pair of helpers. Private to the run file's writer and reader.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/slot_table.h"
#include "io/h5.h"

namespace nanscope::run_tables {

constexpr std::size_t kNameLen = 128, kPhaseLen = 32, kBufferLen = 128, kKindLen = 32,
                      kDumpLen = 256;

struct SlotRow {
  std::int32_t index;
  char name[kNameLen];
  char phase[kPhaseLen];
  char buffer[kBufferLen];
  std::int32_t rank;
  std::int64_t consumers;  // bit i: slot i reads this slot's buffer within the step
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

h5::Handle slot_row_type();
// The /slots member written since the SDK (files before it have none; read on its own).
h5::Handle slot_consumers_type();
h5::Handle event_row_type();
h5::Handle watch_row_type();

// A slot table as the compound table `name` (/slots of a run file; /trainer_slots of another
// trainer's dump). A table of more than 64 slots keeps its consumers as (slot, consumer) pairs in
// `name`_consumers, int32 [edges, 2]; a narrower one in the int64 column, bit i for slot i.
void write_slot_table(hid_t f, const char* name, const SlotTable& table, const std::string& path);
// Another trainer's table `name`, read and checked (DataError naming the file if unsound).
SlotTableRef read_trainer_slot_table(hid_t f, const char* name, const std::string& trainer,
                                     const std::string& path);
// The table a file of `trainer` holds: nanscope's own, or its `name` table.
SlotTableRef read_slot_table(hid_t f, const char* name, const std::string& trainer,
                             const std::string& path);

// A fixed-size text field, NUL-padded (a longer text is cut at N - 1 bytes).
template <std::size_t N>
void put(char (&dst)[N], std::string_view s) {
  std::memset(dst, 0, N);
  std::memcpy(dst, s.data(), std::min(s.size(), N - 1));
}

// dumps/fold{F:03}_step{S:08}_{slot name}.h5, and nothing else (no other directory, no "..").
bool is_dump_name(const std::string& d);

void write_table_rows(hid_t loc, const char* name, const h5::Handle& type, const void* rows,
                      std::size_t n, const std::string& where);
template <class Row>
void write_table(hid_t loc, const char* name, const h5::Handle& type, const std::vector<Row>& rows,
                 const std::string& where) {
  write_table_rows(loc, name, type, rows.data(), rows.size(), where);
}

// A one-dimensional compound table, read as `Row`s (`what` names it in errors).
std::size_t table_rows(hid_t f, const char* name, std::size_t row_bytes, const std::string& path);
void read_table_rows(hid_t f, const char* name, const h5::Handle& type, void* rows, std::size_t n,
                     const std::string& path, const char* what);
template <class Row>
std::vector<Row> read_table(hid_t f, const char* name, const h5::Handle& type,
                            const std::string& path, const char* what) {
  std::vector<Row> rows(table_rows(f, name, sizeof(Row), path));
  read_table_rows(f, name, type, rows.data(), rows.size(), path, what);
  return rows;
}

}  // namespace nanscope::run_tables
