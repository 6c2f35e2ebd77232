// How the workbench names a slot in text: its index and its name ("21 grad_norms"), the one
// spelling of the grids' labels, the status bar, the entry point and the compare table.
#pragma once

#include <QString>
#include <string_view>

#include "models/shown_table.h"

namespace nanscope::gui {

inline QString slot_label(int slot) {
  // The name is a view of the table's own text: sized, not NUL-terminated.
  const std::string_view name = shown_slot(slot).name;
  return QString("%1 %2").arg(slot).arg(
      QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())));
}

}  // namespace nanscope::gui
