#include "widgets/inspector_widget.h"

#include "core/config.h"
#include "core/slot_table.h"
#include "models/shown_table.h"

#include "models/npy_file.h"
#include "models/slot_label.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMessageBox>
#include <QVBoxLayout>
#include <cmath>

namespace nanscope::gui {

InspectorWidget::InspectorWidget(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel("select a slot (table or grid) to inspect its buffer");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bad_ = new QLabel;
  bad_->setWordWrap(true);
  show_live_ = new QPushButton;
  show_live_->setObjectName("inspectLive");
  show_dump_ = new QPushButton;
  show_dump_->setObjectName("inspectDump");
  save_npy_ = new QPushButton("Save .npy...");
  save_npy_->setObjectName("saveNpy");
  save_npy_->setToolTip("the buffer as numpy's .npy (numpy.load reads it bit for bit)");
  save_csv_ = new QPushButton("Save CSV...");
  save_csv_->setObjectName("saveCsv");
  save_csv_->setToolTip("the buffer as CSV: flat index and value");
  connect(save_npy_, &QPushButton::clicked, this, [this] { saveWithDialog(true); });
  connect(save_csv_, &QPushButton::clicked, this, [this] { saveWithDialog(false); });
  auto* choices = new QHBoxLayout;
  choices->addWidget(show_live_);
  choices->addWidget(show_dump_);
  choices->addWidget(save_npy_);
  choices->addWidget(save_csv_);
  choices->addStretch(1);
  for (QPushButton* b : {show_live_, show_dump_, save_npy_, save_csv_}) b->hide();
  connect(show_live_, &QPushButton::clicked, this, [this] {
    if (stats_) Q_EMIT stepChosen(stats_->slot, stats_->fold, stats_->live_step);
  });
  connect(show_dump_, &QPushButton::clicked, this, [this] {
    if (stats_) Q_EMIT stepChosen(stats_->slot, stats_->fold, stats_->dump_step);
  });
  histogram_ = new HistogramPlot;
  histogram_->setMinimumHeight(140);
  page_ = new QSpinBox;
  page_->setPrefix("page ");
  values_ = new QTableWidget(0, 2);
  values_->setObjectName("inspectorValues");
  values_->setHorizontalHeaderLabels({"flat index", "value"});
  values_->verticalHeader()->setVisible(false);
  values_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(summary_);
  layout->addLayout(choices);
  layout->addWidget(bad_);
  layout->addWidget(histogram_, 2);
  layout->addWidget(page_);
  layout->addWidget(values_, 3);
  connect(page_, qOverload<int>(&QSpinBox::valueChanged), this, &InspectorWidget::showPage);
}

void InspectorWidget::clear() {
  stats_.reset();
  for (QPushButton* b : {show_live_, show_dump_, save_npy_, save_csv_}) b->hide();
  summary_->setText("select a slot (table or grid) to inspect its buffer");
  bad_->clear();
  values_->setRowCount(0);
  BufferStats none;
  none.computed = false;
  histogram_->setStats(none);
}

void InspectorWidget::setStats(BufferStatsPtr stats) {
  stats_ = std::move(stats);
  const BufferStats& s = *stats_;
  const QString name = !s.slot_name.isEmpty() ? QString("%1 %2").arg(s.slot).arg(s.slot_name)
                       : s.slot >= 0          ? slot_label(s.slot)
                                              : QString("?");
  show_live_->setVisible(s.source == BufferStats::Source::None && s.live_step >= 0);
  show_live_->setText(QString("Show the newest step (%1)").arg(s.live_step));
  show_dump_->setVisible(s.source == BufferStats::Source::None && s.dump_step >= 0);
  show_dump_->setText(QString("Show its first-fire dump (step %1)").arg(s.dump_step));
  const bool has_values = s.exists && s.computed && !s.values.empty();
  save_npy_->setVisible(has_values);
  save_csv_->setVisible(has_values);
  if (!s.exists || !s.computed) {
    summary_->setText(!s.exists
                          ? QString("slot %1: the buffer does not exist in this run").arg(name)
                          : QString("<b>slot %1</b> — %2").arg(name, s.origin));
    bad_->clear();
    values_->setRowCount(0);
    histogram_->setStats(s);
    return;
  }
  QStringList dims;
  for (auto d : s.shape) dims << QString::number(d);
  const std::int64_t finite = s.finite();
  const QString type = type_of_ ? type_of_(s.slot, s.slot_name) : QString();
  summary_->setText(
      QString("<b>slot %1</b> — %2<br>shape [%3], %4 elements%12<br>"
              "NaN %5, +Inf %6, -Inf %7, finite %8<br>finite min %9, max %10, mean %11")
          .arg(name, s.origin, dims.join(", "))
          .arg(s.count)
          .arg(s.nan)
          .arg(s.posinf)
          .arg(s.neginf)
          .arg(finite)
          .arg(finite ? QString::number(s.finite_min, 'g', 6) : QString("-"))
          .arg(finite ? QString::number(s.finite_max, 'g', 6) : QString("-"))
          .arg(finite ? QString::number(s.finite_mean, 'g', 6) : QString("-"))
          .arg(type.isEmpty() ? QString() : " of " + type + " (checked in that type)"));
  QStringList bad;
  for (auto i : s.first_bad) bad << QString::number(i);
  bad_->setText(bad.isEmpty() ? QString("no non-finite values")
                              : "first bad indices: " + bad.join(", "));
  histogram_->setStats(s);
  const int pages =
      std::max<int>(1, static_cast<int>((s.values.size() + kPageSize - 1) / kPageSize));
  page_->setRange(0, pages - 1);
  // Open on the page of the first bad value, where the user will look first.
  const int start = s.first_bad.empty() ? 0 : static_cast<int>(s.first_bad.front() / kPageSize);
  if (page_->value() == start)
    showPage(start);
  else
    page_->setValue(start);
}

void InspectorWidget::showPage(int page) {
  if (!stats_) return;
  const auto& v = stats_->values;
  const std::size_t begin = static_cast<std::size_t>(page) * kPageSize;
  const std::size_t end = std::min(v.size(), begin + kPageSize);
  values_->setRowCount(static_cast<int>(end > begin ? end - begin : 0));
  // The built-in trainer's gradient norms: the global one, then one per parameter group.
  const bool grad_norms = shown_table().is_builtin() && stats_->slot == kGradNorm &&
                          (stats_->slot_name.isEmpty() || stats_->slot_name == "grad_norm");
  for (std::size_t i = begin; i < end; ++i) {
    const int row = static_cast<int>(i - begin);
    QString index = QString::number(i);
    if (grad_norms && i == 0) index += " (global)";
    if (grad_norms && i >= 1 && i <= kParamGroups.size())
      index += QString(" (%1)").arg(kParamGroups[i - 1]);
    values_->setItem(row, 0, new QTableWidgetItem(index));
    auto* item = new QTableWidgetItem(QString::number(v[i], 'g', 8));
    if (!std::isfinite(v[i])) item->setForeground(QColor(211, 47, 47));
    values_->setItem(row, 1, item);
  }
}

QString InspectorWidget::saveNpy(const QString& path) const {
  if (!stats_ || stats_->values.empty()) return "no buffer is shown";
  return write_npy(path, stats_->shape, stats_->values);
}

QString InspectorWidget::saveCsv(const QString& path) const {
  if (!stats_ || stats_->values.empty()) return "no buffer is shown";
  return write_values_csv(path, stats_->values);
}

void InspectorWidget::saveWithDialog(bool npy) {
  if (!stats_) return;
  const QString name =
      QString("%1_fold%2_step%3.%4")
          .arg(!stats_->slot_name.isEmpty() ? stats_->slot_name
                                            : QString::fromStdString(shown_slot(stats_->slot).name))
          .arg(stats_->fold)
          .arg(stats_->step)
          .arg(npy ? "npy" : "csv");
  const QString path =
      QFileDialog::getSaveFileName(this, npy ? "Save the buffer as .npy" : "Save the buffer as CSV",
                                   name, npy ? "numpy (*.npy)" : "CSV (*.csv)");
  if (path.isEmpty()) return;
  const QString error = npy ? saveNpy(path) : saveCsv(path);
  if (!error.isEmpty())
    QMessageBox::warning(this, "nanscope", "The buffer was not saved: " + error);
}

}  // namespace nanscope::gui
