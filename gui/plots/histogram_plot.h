// The inspector's histogram of a buffer's finite values.
#pragma once

#include "plots/qcp.h"

#include "models/snapshot.h"

namespace nanscope::gui {

// A histogram of finite values (inspector).
class HistogramPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit HistogramPlot(QWidget* parent = nullptr);
  void setStats(const BufferStats& s);

 private:
  QCPBars* bars_;
  QCPItemText* empty_;
};

}  // namespace nanscope::gui
