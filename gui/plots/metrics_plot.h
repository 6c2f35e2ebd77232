// Every per-step series of the run (the loss terms, the global gradient norm and each group's, and
// the slot health series the user adds, on an axis of their own),
// fold boundaries and first fires marked, steps whose total loss is not finite shaded (never
// silently dropped). Series can be picked, the y axis made logarithmic, the steps zoomed (wheel)
// and panned (drag); hovering reads out the step's values; the view exports as PNG and the series
// as CSV. It appends what each update added; the series are decimated for drawing
// (decimated_series.h) and the marks drawn in one layer, so an update costs the same at 100 and at
// 100,000 steps. In follow mode the newest step stays in view; a user's zoom or pan leaves it.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "plots/decimated_series.h"
#include "plots/qcp.h"

#include "models/health_series.h"
#include "models/snapshot.h"

namespace nanscope::gui {

class StepMarks;

class MetricsPlot : public QCustomPlot {
  Q_OBJECT
 public:
  // The series: 7 loss terms (left axis), then the global gradient norm and one per group (right).
  static constexpr int kSeriesCount = static_cast<int>(kLossTerms.size()) + kGroupCount;
  static QString seriesName(int i);

  explicit MetricsPlot(QWidget* parent = nullptr);
  void setView(const Snapshot* view);
  void refresh(bool reset);

  void setSeriesVisible(int i, bool on);
  bool seriesVisible(int i) const { return visible_[static_cast<std::size_t>(i)]; }
  // Slot health series (models/health_series.h) on the health axis at the far right, drawn from
  // every step so far and kept up to date like the others.
  static constexpr int kMaxHealthSeries = 8;
  bool addHealthSeries(const HealthSeriesKey& k);  // false: shown already, or kMaxHealthSeries
  void removeHealthSeries(const HealthSeriesKey& k);
  std::vector<HealthSeriesKey> healthSeries() const;
  QCPAxis* healthAxis() const { return health_axis_; }
  void setLogScale(bool on);
  bool logScale() const;
  // Visible global steps [first, last] (fractional at the edges), and setting them.
  QCPRange stepRange() const { return xAxis->range(); }
  void setStepRange(double first, double last);
  void zoomToFit();
  void setFollow(bool on);
  bool follow() const { return follow_; }
  // The read-out of a global step (what hovering shows), "" outside the run.
  QString readout(int global_step) const;
  QString hoverText() const { return hover_text_; }
  bool exportCsv(const QString& path) const;

  // For tests: the shaded non-finite step ranges [first, last] (global steps), the fire marks.
  std::vector<std::pair<int, int>> nonfiniteRanges() const;
  std::vector<int> fireMarks() const;
  bool showsEmptyState() const;
  // What the empty plot says: how to start a run, or why there is none.
  void setEmptyHint(const QString& text);
  QString emptyHint() const;
  // What the marks are drawn in: the band of steps whose loss is not finite, a first fire's line.
  static QColor nonfiniteBandColour();
  static QColor fireMarkColour();

 Q_SIGNALS:
  void stepRangeChangedByUser(double first, double last);
  void followChanged(bool on);
  void healthSeriesChanged();
  void logScaleChanged(bool on);

 private:
  void clearAll();
  void rescaleValues();
  void userMovedView();
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void leaveEvent(QEvent* e) override;
  static double valueOf(const StepRow& r, int series);

  const Snapshot* view_ = nullptr;
  std::array<QCPGraph*, kSeriesCount> graphs_{};
  std::array<DecimatedSeries, kSeriesCount> series_;
  std::array<bool, kSeriesCount> visible_{};
  struct Extent {  // a series' finite values so far
    double lo = 0, hi = 0, lowest_positive = 0;
    bool any = false, any_positive = false;
  };
  std::array<Extent, kSeriesCount> extent_{};
  static void grow(Extent& e, double v);
  struct HealthGraph {
    HealthSeriesKey key;
    QCPGraph* graph = nullptr;
    DecimatedSeries series;
    Extent extent;
    std::size_t shown = 0;  // steps appended so far
  };
  std::vector<std::unique_ptr<HealthGraph>> health_;
  QCPAxis* health_axis_;
  double healthAt(const HealthGraph& h, std::size_t step) const;
  StepMarks* marks_;
  QCPItemText* empty_;
  QCPItemText* hover_;
  QCPItemStraightLine* hover_line_;
  QString hover_text_;
  std::size_t shown_steps_ = 0, shown_events_ = 0;
  bool follow_ = true, fitted_ = true, setting_range_ = false;
  bool dragging_ = false;
  int drag_x_ = 0;
};

}  // namespace nanscope::gui
