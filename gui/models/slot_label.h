// How the workbench names a slot in text: its index and its name ("21 grad_norms"), the one
// spelling of the grids' labels, the status bar, the entry point and the compare table.
#pragma once

#include <QString>

#include "core/slot_table.h"

namespace nanscope::gui {

inline QString slot_label(int slot) {
  return QString("%1 %2").arg(slot).arg(QString::fromUtf8(slot_info(slot).name.data()));
}

}  // namespace nanscope::gui
