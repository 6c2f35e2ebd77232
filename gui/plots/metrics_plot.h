// Loss terms and the gradient norm per step, fold boundaries and fire events marked.
#pragma once

#include "plots/qcp.h"

#include "models/snapshot.h"

namespace nanscope::gui {

class MetricsPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit MetricsPlot(QWidget* parent = nullptr);
  void setSnapshot(const SnapshotPtr& s);

 private:
  QCPGraph *loss_, *c51_, *grad_;
  std::vector<QCPItemStraightLine*> marks_;
};

// A histogram of finite values (inspector).
class HistogramPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit HistogramPlot(QWidget* parent = nullptr);
  void setStats(const BufferStats& s);

 private:
  QCPBars* bars_;
};

}  // namespace nanscope::gui
