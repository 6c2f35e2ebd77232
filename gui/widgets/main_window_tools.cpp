// MainWindow: finding and sharing. The go-to-step box, the slot name filter, slot health series in
// the metrics, the selected cell copied as text, and view files (.nsview) that reopen a run file
// with the same selection, zoom, series and dock layout.
#include <QAction>
#include <QClipboard>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <cmath>
#include <tuple>

#include "plots/grid_plot.h"
#include "plots/magnitude_plot.h"
#include "plots/metrics_plot.h"
#include "widgets/compare_panel.h"
#include "widgets/main_window.h"
#include "widgets/sweep_panel.h"

namespace nanscope::gui {

namespace {
constexpr int kViewFileVersion = 1;
QString slot_text(int slot) {
  return QString::fromUtf8(shown_slot(slot).name.data());
}
QString copied_number(double v) {
  return std::isfinite(v) ? QString::number(v, 'g', 6) : QString(std::isnan(v) ? "NaN" : "Inf");
}
}  // namespace

QWidget* MainWindow::buildSlotsPanel(QSortFilterProxyModel* proxy) {
  auto* panel = new QWidget;
  auto* lay = new QVBoxLayout(panel);
  lay->setContentsMargins(0, 0, 0, 0);
  slot_filter_ = new QLineEdit;
  slot_filter_->setObjectName("slotFilter");
  slot_filter_->setPlaceholderText("filter slots by name (Enter selects the first)");
  slot_filter_->setClearButtonEnabled(true);
  proxy->setFilterKeyColumn(SlotTableModel::Name);
  proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  connect(slot_filter_, &QLineEdit::textChanged, this, &MainWindow::UI_setSlotFilter);
  connect(slot_filter_, &QLineEdit::returnPressed, this, [this] {
    if (slot_proxy_->rowCount() > 0)
      UI_selectSlot(slot_proxy_->mapToSource(slot_proxy_->index(0, 0)).data(Qt::UserRole).toInt());
  });
  lay->addWidget(slot_filter_);
  lay->addWidget(slot_view_, 1);
  return panel;
}

void MainWindow::UI_setSlotFilter(const QString& text) {
  if (slot_filter_->text() != text) slot_filter_->setText(text);  // scripts and tests
  slot_proxy_->setFilterFixedString(text);
  markSelection();
  showMessage(text.isEmpty() ? QString("every slot shown")
                             : QString("%1 of %2 slots match '%3'")
                                   .arg(slot_proxy_->rowCount())
                                   .arg(shown_slot_count())
                                   .arg(text));
}

void MainWindow::buildNavigateTools() {
  auto* tb = addToolBar("Navigate");
  tb->setObjectName("navigate");
  tb->addWidget(new QLabel(" go to step "));
  go_to_ = new QLineEdit;
  go_to_->setObjectName("goToStep");
  go_to_->setPlaceholderText("STEP or FOLD:STEP");
  go_to_->setMaximumWidth(150);
  go_to_->setToolTip(
      "select the selected slot's cell at a step of the selected fold (STEP) or of another fold "
      "(FOLD:STEP), and bring it into view (Ctrl+G)");
  connect(go_to_, &QLineEdit::returnPressed, this, [this] { UI_goTo(go_to_->text()); });
  tb->addWidget(go_to_);
}

bool MainWindow::UI_goTo(const QString& text) {
  const QStringList parts = text.trimmed().split(':');
  bool ok_fold = true, ok_step = false;
  const int fold = parts.size() == 2 ? parts[0].toInt(&ok_fold) : -1;
  const int step = parts.back().toInt(&ok_step);
  if (parts.size() > 2 || !ok_fold || !ok_step || (parts.size() == 2 && fold < 0)) {
    showMessage(QString("go to step: '%1' is not STEP or FOLD:STEP (numbers from 0)").arg(text));
    return false;
  }
  UI_goToStep(fold, step);
  return true;
}

void MainWindow::UI_goToStep(int fold, int step) {
  if (sel_->slot() < 0) {
    showMessage("go to step: select a slot first (a row of the Slots table or a grid)");
    return;
  }
  if (fold < 0) fold = sel_->fold();
  const int folds = static_cast<int>(view_->folds.size());
  if (fold >= folds) {
    showMessage(
        QString("go to step: fold %1 is not in the run (folds 0-%2)").arg(fold).arg(folds - 1));
    return;
  }
  const auto [begin, end] = view_->fold_steps(fold);
  const int steps = static_cast<int>(end - begin);
  if (step < 0 || step >= steps) {
    showMessage(steps == 0
                    ? QString("go to step: fold %1 has no steps yet").arg(fold)
                    : QString("go to step: fold %1 has steps 0-%2").arg(fold).arg(steps - 1));
    return;
  }
  UI_selectCell(sel_->slot(), fold, step);
  centreStep(step);
  showMessage(QString("fold %1, step %2").arg(fold).arg(step));
}

void MainWindow::UI_stepBack() {
  if (sel_->slot() < 0) {
    showMessage("step back: select a slot first (a row of the Slots table or a grid)");
    return;
  }
  auto [fold, step] = std::pair{sel_->fold(), sel_->step()};
  if (step < 0) std::tie(fold, step) = newestCell();
  if (step <= 0) {
    showMessage(step == 0 ? QString("step back: step 0 is the first of fold %1").arg(fold)
                          : QString("step back: no step has run yet"));
    return;
  }
  UI_goToStep(fold, step - 1);
}

void MainWindow::UI_compareBuffers() {
  const auto& c = compare_->model()->comparison();
  if (sel_->slot() < 0 || !c) {
    compare_->showBuffers(sel_->slot() < 0 ? "select a slot to compare its buffers"
                                           : "pick two steps to compare first");
    return;
  }
  const int slot = sel_->slot(), fold = c->fold, a = c->step_a, b = c->step_b;
  buffer_compare_ = QVariantMap{{"slot", slot}, {"fold", fold}, {"step_a", a}, {"step_b", b}};
  compare_->showBuffers(QString("%1 %2, step %3 vs step %4: recomputing from checkpoints...")
                            .arg(slot)
                            .arg(QString::fromUtf8(shown_slot(slot).name.data()))
                            .arg(a)
                            .arg(b));
  const QString file = offline_ ? view_->source : QString();
  post([=](EngineController* ctrl) { ctrl->RT_compareBuffers(slot, fold, a, b, file); });
}

void MainWindow::onBuffersCompared(const QVariantMap& r) {
  for (const char* key : {"slot", "fold", "step_a", "step_b"})
    if (r.value(key) != buffer_compare_.value(key)) return;  // asked for another pair since
  buffer_compare_ = r;
  compare_->showBuffers(r.value("text").toString());
}

void MainWindow::UI_openSweep(const QString& dir) {
  sweep_timer_->stop();  // the sweep shown before is not read again
  sweep_dir_ = QFileInfo(dir).absoluteFilePath();
  sweep_loaded_ = false;
  // Across the top of the window, above the grids: a sweep is read before any of its runs.
  auto* d = findChild<QDockWidget*>("sweepDock");
  if (dockWidgetArea(d) != Qt::TopDockWidgetArea) addDockWidget(Qt::TopDockWidgetArea, d);
  d->show();
  d->raise();
  resizeDocks({d}, {height() * 2 / 5}, Qt::Vertical);
  post([dir = sweep_dir_](EngineController* c) { c->RT_readSweep(dir); });
}

void MainWindow::onSweepRead(const QString& dir, SweepStatusPtr status) {
  if (dir != sweep_dir_) return;  // another sweep was opened since
  sweep_loaded_ = true;
  if (!status) {  // it could not be read (the error box says why): not read again
    sweep_timer_->stop();
    return;
  }
  sweep_->setStatus(status);
  // Refreshed every 2 s while tasks are pending or running.
  if (status->running + status->pending > 0)
    sweep_timer_->start();
  else
    sweep_timer_->stop();
  showMessage(QString("sweep %1: %2").arg(QString::fromStdString(status->spec.name), dir));
}

// Puts a step in the middle of the step grid (and the metrics), keeping the zoom, unless every
// step is shown already.
void MainWindow::centreStep(int step) {
  const QCPRange r = step_plot_->xAxis->range();
  if (r.lower <= -0.5 && r.upper >= step_grid_->columnCount() - 0.5) return;
  UI_setFollow(false);
  step_plot_->setColumnRange(step - r.size() / 2, step + r.size() / 2);
  Q_EMIT step_plot_->columnRangeChangedByUser(step_plot_->xAxis->range().lower,
                                              step_plot_->xAxis->range().upper);
}

void MainWindow::buildHealthSeriesMenu(QMenu* menu) {
  QMenu* add = menu->addMenu("Add the selected slot's health");
  // The menu names the slot it adds (or says that none is selected).
  connect(sel_, &ViewSelection::changed, add, [this, add] {
    add->setTitle(sel_->slot() < 0 ? QString("Add the selected slot's health (select a slot first)")
                                   : QString("Add the health of %1").arg(slot_label(sel_->slot())));
  });
  for (std::size_t m = 0; m < kHealthMeasureNames.size(); ++m) {
    const auto measure = static_cast<HealthMeasure>(m);
    add->addAction(measure_name(measure), this, [this, measure] {
      if (sel_->slot() < 0) {
        showMessage("select a slot first: its health is added to the metrics");
        return;
      }
      if (!metrics_->addHealthSeries({sel_->slot(), measure}))
        showMessage(QString("not added: shown already, or %1 health series are shown")
                        .arg(MetricsPlot::kMaxHealthSeries));
    });
  }
  QMenu* remove = menu->addMenu("Remove a health series");
  auto fill = [this, remove] {
    remove->clear();
    for (const HealthSeriesKey& k : metrics_->healthSeries())
      remove->addAction(health_series_name(k), this,
                        [this, k] { metrics_->removeHealthSeries(k); });
    remove->setEnabled(!remove->isEmpty());
  };
  fill();
  connect(metrics_, &MetricsPlot::healthSeriesChanged, this, fill);
}

QString MainWindow::cellSummary() const {
  const int slot = sel_->slot(), fold = sel_->fold(), step = sel_->step();
  if (slot < 0 || fold < 0 || static_cast<std::size_t>(fold) >= view_->folds.size()) return {};
  QStringList lines;
  lines << QString("slot %1 %2, fold %3, %4")
               .arg(slot)
               .arg(slot_text(slot))
               .arg(fold)
               .arg(step < 0 ? QString("no step selected") : QString("step %1").arg(step));
  const auto [begin, end] = view_->fold_steps(fold);
  const std::size_t g = begin + static_cast<std::size_t>(std::max(step, 0));
  if (step >= 0 && g < end) {
    const StepRow& r = view_->steps[g];
    const bool checked = r.checked.test(slot);
    const std::uint8_t kinds = r.flags[static_cast<std::size_t>(slot)];
    QStringList k;
    for (const auto& n : kind_names(kinds)) k << QString::fromStdString(n);
    lines << QString("global step %1; at this step: %2")
                 .arg(g)
                 .arg(!checked ? QString("not checked")
                      : kinds  ? QString("non-finite (%1)").arg(k.join(", "))
                               : QString("finite"));
    if (g < view_->health.size() && measured(health_at(view_->health[g], slot))) {
      const HealthRow& h = health_at(view_->health[g], slot);
      QStringList fields;
      for (std::size_t m = 0; m < kHealthMeasureNames.size(); ++m)
        fields << QString("%1 %2").arg(
            measure_name(static_cast<HealthMeasure>(m)),
            copied_number(health_value(h, static_cast<HealthMeasure>(m))));
      lines << "health: " + fields.join(", ");
    }
  }
  const SlotRecord& rec = view_->folds[static_cast<std::size_t>(fold)].slots[slot];
  QStringList k;
  for (const auto& n : kind_names(rec.kinds)) k << QString::fromStdString(n);
  lines << QString("in fold %1: %2")
               .arg(fold)
               .arg(rec.first_step >= 0
                        ? QString("first fired at step %1 (%2), %3 non-finite values")
                              .arg(rec.first_step)
                              .arg(k.join(", "))
                              .arg(rec.count)
                        : QString(state_name(rec.state)));
  lines << QString("source: %1").arg(offline_ ? view_->source : view_->run_file);
  return lines.join('\n');
}

void MainWindow::UI_copyCell() {
  const QString text = cellSummary();
  if (text.isEmpty()) {
    showMessage("nothing to copy: select a cell first");
    return;
  }
  QGuiApplication::clipboard()->setText(text);
  showMessage("copied the selected cell's summary");
}

bool MainWindow::saveViewFile(const QString& path, QString* error) const {
  const QString run = offline_ ? view_->source : view_->run_file;
  QJsonArray series, health;
  for (int i = 0; i < MetricsPlot::kSeriesCount; ++i)
    if (metrics_->seriesVisible(i)) series.append(MetricsPlot::seriesName(i));
  for (const HealthSeriesKey& k : metrics_->healthSeries()) health.append(health_series_name(k));
  const QCPRange range = step_plot_->xAxis->range();
  QJsonObject o{{"nanscope_view", kViewFileVersion},
                {"run_file", QFileInfo(run).absoluteFilePath()},
                // Beside the view file first: a colleague's copy of both keeps working.
                {"run_file_relative", QFileInfo(path).absoluteDir().relativeFilePath(run)},
                {"fold", sel_->fold()},
                {"step", sel_->step()},
                {"slot", sel_->slot() >= 0 ? QJsonValue(slot_text(sel_->slot())) : QJsonValue()},
                {"step_range", QJsonArray{range.lower, range.upper}},
                {"magnitude", magnitudeShown()},
                {"series", series},
                {"health_series", health},
                {"log_scale", metrics_->logScale()},
                {"dock_layout", QString::fromLatin1(saveState().toBase64())}};
  QFile f(path);
  if (run.isEmpty() || !f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
      f.write(QJsonDocument(o).toJson()) <= 0) {
    if (error)
      *error = run.isEmpty() ? QString("no run file is shown: nothing to save a view of")
                             : QString("could not write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

void MainWindow::UI_openViewFile(const QString& path) {
  QFile f(path);
  QJsonParseError parse{};
  const QJsonDocument doc = f.open(QIODevice::ReadOnly)
                                ? QJsonDocument::fromJson(f.read(1 << 20), &parse)
                                : QJsonDocument();
  const QJsonObject v = doc.object();
  QString why;
  if (!f.isOpen())
    why = f.errorString();
  else if (parse.error != QJsonParseError::NoError)
    why = QString("not JSON at byte %1: %2").arg(parse.offset).arg(parse.errorString());
  else if (v.value("nanscope_view").toInt() != kViewFileVersion)
    why = QString("key nanscope_view: expected %1").arg(kViewFileVersion);
  QString run;
  for (const QString& candidate :
       {QFileInfo(path).absoluteDir().filePath(v.value("run_file_relative").toString()),
        v.value("run_file").toString()})
    if (why.isEmpty() && run.isEmpty() && QFileInfo(candidate).isFile()) run = candidate;
  if (why.isEmpty() && run.isEmpty())
    why = QString("key run_file: %1 is not there (nor beside the view file)")
              .arg(v.value("run_file").toString());
  if (why.isEmpty() && isViewFile(run))
    why = QString("key run_file: %1 is a view file, not a run file").arg(run);
  if (!why.isEmpty()) {
    onError(static_cast<int>(ErrorClass::File), QString("view file %1: %2").arg(path, why));
    return;
  }
  addRecent(QFileInfo(path).absoluteFilePath());
  if (offline_ && QFileInfo(view_->source) == QFileInfo(run)) {
    applyViewFile(v);
    return;
  }
  UI_openFile(run);
  pending_view_ = v;  // applied once the run file is shown (UI_applyUpdate); dropped on an error
}

// Applies what the view file has (a key it lacks leaves that part as it is); what it names that the
// run does not have is skipped and said.
void MainWindow::applyViewFile(const QJsonObject& v) {
  QStringList skipped;
  if (v.contains("dock_layout") &&
      !restoreState(QByteArray::fromBase64(v.value("dock_layout").toString().toLatin1())))
    skipped << "dock_layout (not a layout of this window)";
  if (v.contains("series")) {
    QStringList series;
    for (const auto& s : v.value("series").toArray()) series << s.toString();
    for (int i = 0; i < MetricsPlot::kSeriesCount; ++i) {
      metrics_->setSeriesVisible(i, series.contains(MetricsPlot::seriesName(i)));
      series.removeAll(MetricsPlot::seriesName(i));
    }
    for (const QString& s : series) skipped << QString("series '%1' (no such series)").arg(s);
  }
  if (v.contains("health_series")) {
    for (const HealthSeriesKey& k : metrics_->healthSeries()) metrics_->removeHealthSeries(k);
    for (const auto& s : v.value("health_series").toArray()) {
      QString error;
      if (const auto k = parse_health_series(s.toString(), &error))
        metrics_->addHealthSeries(*k);
      else
        skipped << error;
    }
  }
  if (v.contains("log_scale")) metrics_->setLogScale(v.value("log_scale").toBool());
  if (v.contains("magnitude")) UI_showMagnitude(v.value("magnitude").toBool());
  const QString slot_name = v.value("slot").toString();
  const auto slot = shown_table().find(slot_name.toStdString());
  if (!slot_name.isEmpty() && !slot) skipped << QString("slot '%1' (no such slot)").arg(slot_name);
  const int fold = v.value("fold").toInt(-1), folds = static_cast<int>(view_->folds.size());
  if (v.contains("fold") && (fold < 0 || fold >= folds)) {
    skipped << QString("fold %1 (the run has folds 0-%2)").arg(fold).arg(folds - 1);
  } else if (v.contains("fold")) {
    const auto [begin, end] = view_->fold_steps(fold);
    int step = v.value("step").toInt(-1);
    if (step < -1 || step >= static_cast<int>(end - begin)) {
      skipped
          << QString("step %1 (fold %2 has steps 0-%3)").arg(step).arg(fold).arg(end - begin - 1);
      step = -1;
    }
    sel_->setFoldChosen(true);
    UI_selectCell(slot.value_or(-1), fold, step);
  } else if (slot) {
    UI_selectSlot(*slot);  // a slot without a fold: that slot in the fold shown
  }
  const QJsonArray range = v.value("step_range").toArray();
  if (range.size() == 2) {
    UI_setFollow(false);
    step_plot_->setColumnRange(range[0].toDouble(), range[1].toDouble());
    Q_EMIT step_plot_->columnRangeChangedByUser(step_plot_->xAxis->range().lower,
                                                step_plot_->xAxis->range().upper);
  }
  if (skipped.isEmpty())
    showMessage("view restored");
  else
    onError(static_cast<int>(ErrorClass::File),
            QString("view restored, except: %1").arg(skipped.join("; ")));
}

// A watch trip that arrives during a live run says so in the status bar (it is easy to miss in a
// long grid); the Events dock keeps it.
void MainWindow::announceTrips(std::size_t first_new_event) {
  int trips = 0;
  const SnapshotEvent* first = nullptr;
  for (std::size_t i = first_new_event; i < view_->events.size(); ++i)
    if (view_->events[i].kind == EventKind::Watch) {
      if (!first) first = &view_->events[i];
      ++trips;
    }
  if (!first) return;
  const QString detail =
      events_->index(static_cast<int>(first - view_->events.data()), EventsModel::Detail)
          .data()
          .toString();
  QString text =
      QString("watch trip at fold %1, step %2: %3").arg(first->fold).arg(first->step).arg(detail);
  if (trips > 1) text += QString(" (and %1 more; see Events, F8)").arg(trips - 1);
  statusBar()->showMessage(text, 15000);
}

}  // namespace nanscope::gui
