// Buffer inspector: shape, finite min/max/mean, NaN/+Inf/-Inf counts, histogram, the first bad
// indices and a paged table of values. It only draws: the statistics come reduced from the engine
// thread (or from a dump file).
#pragma once

#include <QLabel>
#include <QSpinBox>
#include <QTableWidget>
#include <QWidget>

#include "models/snapshot.h"
#include "plots/metrics_plot.h"

namespace nanscope::gui {

class InspectorWidget : public QWidget {
  Q_OBJECT
 public:
  explicit InspectorWidget(QWidget* parent = nullptr);
  void setStats(BufferStatsPtr stats);
  void clear();  // back to "select a slot"
  BufferStatsPtr stats() const { return stats_; }
  QString summaryText() const { return summary_->text(); }

 private:
  void showPage(int page);
  BufferStatsPtr stats_;
  QLabel* summary_;
  QLabel* bad_;
  HistogramPlot* histogram_;
  QSpinBox* page_;
  QTableWidget* values_;
  static constexpr int kPageSize = 256;
};

}  // namespace nanscope::gui
