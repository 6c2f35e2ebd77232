#include "models/shown_table.h"

#include <algorithm>

namespace nanscope::gui {
namespace {

struct Shown {
  SlotTableRef table = SlotTable::builtin();
  std::uint64_t generation = 0;
  std::vector<int> order, row;  // dataflow order, and each slot's row in it
  std::uint64_t ordered_for = ~std::uint64_t{0};
};

Shown& shown() {
  static Shown s;
  return s;
}

void order_rows(Shown& s) {
  if (s.ordered_for == s.generation) return;
  const SlotTable& t = *s.table;
  s.order.resize(static_cast<std::size_t>(t.size()));
  for (int i = 0; i < t.size(); ++i) s.order[static_cast<std::size_t>(i)] = i;
  std::stable_sort(s.order.begin(), s.order.end(),
                   [&t](int a, int b) { return t[a].rank < t[b].rank; });
  s.row.assign(s.order.size(), 0);
  for (std::size_t r = 0; r < s.order.size(); ++r)
    s.row[static_cast<std::size_t>(s.order[r])] = static_cast<int>(r);
  s.ordered_for = s.generation;
}

}  // namespace

const SlotTable& shown_table() {
  return *shown().table;
}

const SlotInfo& shown_slot(int slot) {
  return shown().table->at(slot);
}

int shown_slot_count() {
  return shown().table->size();
}

void show_table(const SlotTableRef& table) {
  Shown& s = shown();
  if (!table || table == s.table) return;
  s.table = table;
  ++s.generation;
}

std::uint64_t shown_table_generation() {
  return shown().generation;
}

const std::vector<int>& dataflow_order() {
  Shown& s = shown();
  order_rows(s);
  return s.order;
}

int row_of_slot(int slot) {
  Shown& s = shown();
  order_rows(s);
  return slot >= 0 && static_cast<std::size_t>(slot) < s.row.size()
             ? s.row[static_cast<std::size_t>(slot)]
             : static_cast<int>(s.row.size());
}

}  // namespace nanscope::gui
