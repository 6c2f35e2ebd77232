// Buffer inspector: shape, finite min/max/mean, NaN/+Inf/-Inf counts, histogram, the first bad
// indices and a paged table of values. It only draws: the statistics come reduced from the engine
// thread (or from a dump file).
#pragma once

#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QWidget>
#include <functional>

#include "models/snapshot.h"
#include "plots/histogram_plot.h"

namespace nanscope::gui {

class InspectorWidget : public QWidget {
  Q_OBJECT
 public:
  explicit InspectorWidget(QWidget* parent = nullptr);
  void setStats(BufferStatsPtr stats);
  // The element type of a buffer (its slot and, for a dump, the slot name its file gives) when it
  // is a slot of the shown run's table ("bfloat16"; empty otherwise), for the summary's line.
  void setTypeOf(std::function<QString(int slot, const QString& name)> type_of) {
    type_of_ = std::move(type_of);
  }
  void clear();  // back to "select a slot"
  BufferStatsPtr stats() const { return stats_; }
  QString summaryText() const { return summary_->text(); }
  QPushButton* liveChoice() const { return show_live_; }
  // The shown buffer to a file: numpy's .npy (bit for bit) or CSV; an empty string, or why not.
  QString saveNpy(const QString& path) const;
  QString saveCsv(const QString& path) const;
  QPushButton* dumpChoice() const { return show_dump_; }

 Q_SIGNALS:
  // No buffer of the selected cell is kept: the user chose the fold's newest step (live) or the
  // slot's nearest first-fire dump instead.
  void stepChosen(int slot, int fold, int step);

 private:
  std::function<QString(int, const QString&)> type_of_;
  void showPage(int page);
  BufferStatsPtr stats_;
  QLabel* summary_;
  QLabel* bad_;
  QPushButton *show_live_, *show_dump_, *save_npy_, *save_csv_;
  void saveWithDialog(bool npy);
  HistogramPlot* histogram_;
  QSpinBox* page_;
  QTableWidget* values_;
  static constexpr int kPageSize = 256;
};

}  // namespace nanscope::gui
