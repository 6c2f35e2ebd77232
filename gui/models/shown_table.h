// The slot table of the run the window shows: the snapshot's own (SnapshotHead::table), made the
// shown one when the window applies a snapshot of another table, so that the grids' rows, the
// labels and the tooltips read one table. UI thread only; the engine and the files never read it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/slot_table.h"

namespace nanscope::gui {

const SlotTable& shown_table();
const SlotInfo& shown_slot(int slot);
int shown_slot_count();
// Shows `table` (nothing changes when it is the one shown).
void show_table(const SlotTableRef& table);
// Changes whenever another table is shown (views that cache rows compare it).
std::uint64_t shown_table_generation();

// The shown table's slots in dataflow order (the rows of the grids and the slot table), and the
// row of a slot.
const std::vector<int>& dataflow_order();
int row_of_slot(int slot);

}  // namespace nanscope::gui
