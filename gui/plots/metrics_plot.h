// Loss terms and the gradient norm per step, fold boundaries and first fires marked, steps whose
// total loss is not finite shaded (never silently dropped). It reads the window's picture and
// appends what each update added; the series are decimated for drawing (decimated_series.h) and
// the marks drawn in one layer, so an update costs the same at 100 and at 100,000 steps.
#pragma once

#include "plots/decimated_series.h"
#include "plots/qcp.h"

#include "models/snapshot.h"

namespace nanscope::gui {

class StepMarks;

class MetricsPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit MetricsPlot(QWidget* parent = nullptr);
  void setView(const Snapshot* view);
  void refresh(bool reset);
  // For tests: the shaded non-finite step ranges [first, last] (global steps), the fire marks.
  std::vector<std::pair<int, int>> nonfiniteRanges() const;
  std::vector<int> fireMarks() const;

 private:
  void clearAll();
  const Snapshot* view_ = nullptr;
  QCPGraph *loss_, *c51_, *grad_;
  DecimatedSeries loss_series_, c51_series_, grad_series_;
  StepMarks* marks_;
  std::size_t shown_steps_ = 0, shown_events_ = 0;
  double ymin_ = 0, ymax_ = 0, gmax_ = 0;
  bool any_finite_ = false;
};

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
