#include "widgets/window_placement.h"

#include <QScreen>

#include <algorithm>

namespace nanscope::gui {

void keep_within_screen(QWidget& w) {
  const QScreen* screen = w.screen();
  if (!screen) return;
  const QRect area = screen->availableGeometry();
  // The frame (title bar, borders) is the window manager's; before the window is shown it is
  // not known yet, so the frame's usual share is left free.
  const QSize frame = w.isVisible() ? w.frameGeometry().size() - w.size() : QSize(8, 32);
  w.resize(w.size().boundedTo(area.size() - frame).expandedTo(w.minimumSize()));
  const QRect at = w.geometry();
  const int x = std::clamp(at.x(), area.left(), std::max(area.left(), area.right() - at.width()));
  const int y = std::clamp(at.y(), area.top(), std::max(area.top(), area.bottom() - at.height()));
  if (x != at.x() || y != at.y()) w.move(x, y);
}

}  // namespace nanscope::gui
