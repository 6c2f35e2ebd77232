// Where a top-level window opens: within the screen it is on. A size saved on a larger screen (or
// the default 1500x950 on a 1280x800 laptop) would put the status bar and the metrics past the
// screen's edge.
#pragma once

#include <QWidget>

namespace nanscope::gui {

// Shrinks `w` to its screen's available area (not below its minimum size) and moves it inside.
void keep_within_screen(QWidget& w);

}  // namespace nanscope::gui
