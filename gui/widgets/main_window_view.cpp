// MainWindow: what it shows. Updates from the engine thread (or a file) are applied to the
// window's picture, the views refresh from it, and viewState says what they show.
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QToolButton>
#include <cmath>

#include "backend_choice.h"
#include "models/slot_label.h"
#include "plots/grid_plot.h"
#include "plots/magnitude_plot.h"
#include "plots/metrics_plot.h"
#include "widgets/compare_panel.h"
#include "widgets/injection_panel.h"
#include "widgets/inspector_widget.h"
#include "widgets/main_window.h"
#include "widgets/run_status_bar.h"
#include "widgets/sweep_panel.h"

namespace nanscope::gui {

namespace {
QString source_text(BufferStats::Source s) {
  switch (s) {
    case BufferStats::Source::Live:
      return "live";
    case BufferStats::Source::Dump:
      return "dump";
    case BufferStats::Source::Recomputed:
      return "recomputed";
    case BufferStats::Source::Recomputing:
      return "recomputing";
    case BufferStats::Source::None:
      break;
  }
  return "none";
}
QJsonArray kinds_json(std::uint8_t kinds) {
  QJsonArray a;
  for (const auto& k : kind_names(kinds)) a.append(QString::fromStdString(k));
  return a;
}
}  // namespace

void MainWindow::UI_applyUpdate(UpdatePtr u) {
  if (!u->head.offline) {
    have_live_ = true;
    problem_.clear();
    if (offline_) {  // a file is shown: the live session waits for "Back to live run"
      updateControls();
      return;
    }
    if (!u->reset && (u->epoch != epoch_ || u->seq <= last_seq_)) return;  // stale: of an older run
  }
  const std::size_t events_before = view_->events.size();
  // A new live run (Stop, a new configuration): a cell clicked in the old one is not its cell.
  const bool new_live_run = u->reset && !u->head.offline && u->epoch != epoch_;
  if (!apply_update(*view_, *u)) {  // the window lost track: ask for the whole picture
    post([](EngineController* c) { c->RT_resync(); });
    return;
  }
  last_seq_ = u->seq;
  epoch_ = u->epoch;
  have_view_ = true;
  const int last_fold = std::max(0, static_cast<int>(view_->folds.size()) - 1);
  if (new_live_run) {
    sel_->setFoldChosen(false);
    sel_->setStep(-1);
  }
  if (u->reset) {
    // Never another run's buffer: a new live run asks again for the selected cell (or nothing).
    if (!u->head.offline) inspectSelection();
    if (u->head.offline) sel_->setFold(view_->entry ? view_->entry->fold : last_fold);
  }
  // Live, the views follow the run's fold until the user picks a fold or a cell. A selection that
  // follows has no step of its own (its step would be another cell in the next fold): the
  // inspector shows the slot's newest buffer.
  const int live_fold = std::min(view_->fold, last_fold);
  const bool follow = !u->head.offline && !sel_->foldChosen() && sel_->fold() != live_fold;
  if (follow) sel_->switchFold(live_fold);
  refreshViews(u->reset);
  if (follow && sel_->slot() >= 0 && !u->reset) inspectSelection();
  if (!u->head.offline && !u->reset) announceTrips(events_before);
  if (u->reset && u->head.offline && pending_view_) {
    const QJsonObject v = *pending_view_;
    pending_view_.reset();
    applyViewFile(v);
  }
  Q_EMIT snapshotShown(u->seq);
}

void MainWindow::UI_selectFold(int fold) {
  sel_->switchFold(fold);  // another fold: its own step and default compare pair
  refreshViews(false);
}

void MainWindow::refreshViews(bool reset) {
  fold_grid_->refresh(reset);
  if (step_grid_->fold() != sel_->fold())
    step_grid_->setFold(sel_->fold());
  else
    step_grid_->refresh(reset);
  slot_table_->setFold(sel_->fold());
  events_->refresh(reset);
  metrics_->refresh(reset);
  step_plot_->xAxis->setLabel(stepGridLabel());
  magnitude_plot_->xAxis->setLabel(stepGridLabel());
  if (reset) {
    sel_->setComparePick(std::nullopt);
    magnitude_plot_->resetCache();
  }
  magnitude_plot_->setFold(sel_->fold());
  magnitude_plot_->setColumnRange(step_plot_->xAxis->range().lower,
                                  step_plot_->xAxis->range().upper);
  updateEntries();
  updateCompare();
  const Snapshot& s = *view_;
  if (s.entry) {
    entry_->setText(QString("entry point: slot %1 (fold %2, step %3)")
                        .arg(slot_label(s.entry->slot))
                        .arg(s.entry->fold)
                        .arg(s.entry->step));
  } else {
    entry_->setText(have_view_ ? "entry point: - (nothing fired)" : "entry point: -");
  }
  if (const auto fe = s.fold_entry(sel_->fold()); fe && (!s.entry || s.entry->fold != sel_->fold()))
    entry_->setText(entry_->text() + QString("\nfold %1's entry point: slot %2 (step %3)")
                                         .arg(sel_->fold())
                                         .arg(slot_label(fe->slot))
                                         .arg(fe->step));
  backward_->setText(
      s.backward_entry
          ? QString("backward localisation: %1 (slot %2 fired first, fold %3, step %4)")
                .arg(QString::fromUtf8(backward_stage_description(s.backward_entry->slot)))
                .arg(s.backward_entry->slot)
                .arg(s.backward_entry->fold)
                .arg(s.backward_entry->step)
          : QString("backward localisation: -"));
  if (s.halt)
    entry_->setText(entry_->text() + QString("\nstopped: %1 at fold %2, step %3")
                                         .arg(kind_text(s.halt->kind))
                                         .arg(s.halt->fold)
                                         .arg(s.halt->step));
  if (config_view_->toPlainText() != s.config_toml) config_view_->setPlainText(s.config_toml);
  setWindowTitle(
      !have_view_ ? QString("nanscope")
      : offline_
          ? QString("%1 (offline, %2) - nanscope")
                .arg(run_file_title(s.source),
                     s.trainer.isEmpty() ? "scenario " + s.scenario : "trainer " + s.trainer)
          : QString("%1 (live%2) - nanscope")
                .arg(s.scenario,
                     s.run_file.isEmpty()
                         ? QString()
                         : ", " + QFileInfo(QFileInfo(s.run_file).absolutePath()).fileName()));
  updateControls();
}

void MainWindow::updateEntries() {
  std::vector<std::pair<int, int>> folds;
  for (int k = 0; k < static_cast<int>(view_->folds.size()); ++k)
    if (const auto e = view_->fold_entry(k)) folds.emplace_back(e->slot, k);
  fold_plot_->setEntries(folds);
  std::vector<std::pair<int, int>> steps;
  if (const auto e = view_->fold_entry(sel_->fold())) steps.emplace_back(e->slot, e->step);
  step_plot_->setEntries(steps);
  magnitude_plot_->setEntries(steps);
}

void MainWindow::UI_showMagnitude(bool on) {
  step_views_->setCurrentWidget(on ? static_cast<QWidget*>(magnitude_plot_) : step_plot_);
  (on ? show_magnitude_ : show_state_)->setChecked(true);
}

bool MainWindow::magnitudeShown() const {
  return step_views_->currentWidget() == magnitude_plot_;
}

void MainWindow::UI_compareSteps(int step_a, int step_b) {
  sel_->setComparePick(std::make_pair(step_a, step_b));
  updateCompare();
}

void MainWindow::UI_compareDefault() {
  sel_->setComparePick(std::nullopt);
  updateCompare();
}

// Step compare of the selected fold: the user's pair or the default one, the table, and the
// jumped slots marked at the later step in both views of the step grid (not for the first and
// last steps of a fold where nothing fired or warned: early training grows many buffers tenfold,
// and a healthy grid covered in marks would read as trouble).
void MainWindow::updateCompare() {
  const auto [begin, end] = view_->fold_steps(sel_->fold());
  const int steps = static_cast<int>(end - begin);
  std::optional<std::pair<int, int>> pair = sel_->comparePick();
  bool mark = true;
  QString why;
  if (pair) {
    compare_how_ = "picked";
  } else if (steps == 0) {
    why = QString("fold %1 has no steps yet").arg(sel_->fold());
  } else if (const auto d = default_compare_steps(*view_, sel_->fold())) {
    pair = d->steps;
    compare_how_ = d->how;
    mark = d->after_trouble;
  } else {
    why = QString("fold %1 fired at step 0: there is no clean step before it; pick two steps")
              .arg(sel_->fold());
  }
  std::optional<StepComparison> c;
  if (pair) c = compare_in_view(*view_, sel_->fold(), pair->first, pair->second);
  if (pair && !c) why = QString("fold %1 has no step %2").arg(sel_->fold()).arg(pair->second);
  if (!c) compare_how_.clear();
  // The first and last steps of an uneventful fold are a summary: growths over a whole fold are no
  // jumps, and neither the table nor the grid marks them.
  if (c && !mark)
    for (SlotChange& r : c->rows) r.jumped = false;
  std::vector<std::pair<int, int>> marks;
  if (c && mark)
    for (const SlotChange& r : c->rows)
      if (r.jumped) marks.emplace_back(r.slot, c->step_b);
  const bool same_pair = c && buffer_compare_.value("fold").toInt() == c->fold &&
                         buffer_compare_.value("step_a").toInt() == c->step_a &&
                         buffer_compare_.value("step_b").toInt() == c->step_b &&
                         buffer_compare_.value("slot").toInt() == sel_->slot();
  if (!buffer_compare_.isEmpty() && !same_pair) {  // another pair: the old line is not about it
    buffer_compare_.clear();
    compare_->showBuffers({});
  }
  compare_->show(std::move(c), steps, compare_how_, why, mark);
  step_plot_->setMarks(marks);
  magnitude_plot_->setMarks(marks);
}

// The sweep view as the state JSON says it: every task with its state and folds (in the spec's
// order), the rows as the view shows them (filtered, sorted), and the summary line.
QJsonValue MainWindow::sweepState() const {
  const SweepStatusPtr& s = sweep_->model()->status();
  if (sweep_dir_.isEmpty() || !s) return QJsonValue();
  QJsonArray tasks, rows;
  for (const TaskStatus& t : s->tasks) {
    QJsonArray folds;
    for (const FoldOutcome& f : t.folds)
      folds.append(QJsonObject{{"fold", folds.size()},
                               {"state", QString::fromStdString(fold_cell_name(f.cell))},
                               {"entry_slot", f.entry_slot},
                               {"entry_step", f.entry_step}});
    tasks.append(QJsonObject{
        {"name", QString::fromStdString(t.task.name)},
        {"variant", QString::fromStdString(t.variant)},
        {"seed", static_cast<qint64>(t.task.seed)},
        {"state", QString::fromStdString(task_state_name(t.state))},
        {"outcome", QString::fromStdString(outcome_name(t.outcome))},
        {"exit_code", t.exit_code},
        {"reason", QString::fromStdString(t.reason)},
        {"entry", t.entry ? QJsonValue(QJsonObject{
                                {"slot", t.entry->slot},
                                {"name", QString::fromStdString(builtin_slot(t.entry->slot).name)},
                                {"fold", t.entry->fold},
                                {"step", t.entry->step}})
                          : QJsonValue()},
        {"folds", folds}});
  }
  const QSortFilterProxyModel* p = sweep_->proxy();
  for (int r = 0; r < p->rowCount(); ++r)
    rows.append(p->index(r, SweepModel::Task).data().toString());
  QJsonArray top;
  for (const auto& [slot, n] : sweep_->model()->firstFiringSlots())
    top.append(QJsonObject{{"slot", slot}, {"tasks", n}});
  return QJsonObject{{"dir", sweep_dir_},
                     {"name", QString::fromStdString(s->spec.name)},
                     {"summary", sweep_->summary()},
                     {"counts", QJsonObject{{"clean", s->clean},
                                            {"fired", s->fired},
                                            {"warned", s->warned},
                                            {"failed", s->failed},
                                            {"running", s->running},
                                            {"pending", s->pending}}},
                     {"tasks", tasks},
                     {"rows", rows},
                     {"first_firing_slots", top}};
}

QString MainWindow::stepGridLabel() const {
  return QString("slot x step (fold %1)").arg(sel_->fold());
}

QString MainWindow::statusText() const {
  return position_text(*view_, statusMode());
}

// A run file as the title names it: its folder and name, or a sweep task's name (every task's
// file is tasks/NAME/run/run.h5, which the file name alone cannot tell apart).
QString run_file_title(const QString& path) {
  const QFileInfo file(path);
  QDir dir = file.dir();
  const QString folder = dir.dirName();
  if (folder == "run" && dir.cdUp() && dir.cdUp() && dir.dirName() == "tasks")
    return QString("sweep task %1").arg(QFileInfo(file.dir().absolutePath()).dir().dirName());
  return folder + "/" + file.fileName();
}

void MainWindow::showMessage(const QString& text) {
  statusBar()->showMessage(text, 6000);
}

void MainWindow::updateControls() {
  const bool live = !offline_ && have_live_;
  const bool can_step = live && !running_ && !view_->finished;
  updateProgress();
  for (QAction* a : live_actions_) {
    if (a == pause_action_)
      a->setEnabled(live && running_);
    else if (live_anytime_.contains(a))
      a->setEnabled(live);
    else
      a->setEnabled(can_step);
  }
  injection_->setEnabled(live && !running_);
  scenario_->setEnabled(!offline_);
  // The empty plots say how to start, or, with no run to start, that there is none and where the
  // reason is (never keys whose controls are disabled).
  const bool no_run = !offline_ && !have_live_;
  for (GridPlot* g : {fold_plot_, step_plot_})
    g->setEmptyHint(no_run ? QString("no run\n(the status bar says why)")
                           : QString("no data yet\nF10: one step\nF5: run until a slot fires"));
  metrics_->setEmptyHint(no_run ? QString("no run (the status bar says why)")
                                : QString("no data yet: step (F10) or run (F5)"));
  // Offline the box names the file's scenario (recorded in it), live the run's. A name that is no
  // preset ("(not recorded)" in older files) is shown as the box's text with no item selected.
  if (have_view_ && scenario_->currentText() != view_->scenario) {
    scenario_->setPlaceholderText(view_->scenario);
    scenario_->setCurrentIndex(scenario_->findText(view_->scenario));  // -1: the placeholder
  }
  live_action_->setEnabled(offline_ || !have_live_);
  const bool cuda = live && view_->backend_kind == BackendKind::Cuda;
  graph_action_->setEnabled(cuda);
  graph_action_->setChecked(cuda && view_->graph);
}

QJsonObject MainWindow::viewState() const {
  const Snapshot& s = *view_;
  QJsonObject o;
  o["mode"] = offline_ ? "offline" : "live";
  o["source"] = offline_ ? s.source : s.run_file;
  o["fold"] = sel_->fold();
  o["running"] = s.running;
  o["finished"] = s.finished;
  o["global_step"] = static_cast<qint64>(s.global_step);
  o["scenario"] = s.scenario;
  o["trainer"] = s.trainer.isEmpty() ? QString("nanscope") : s.trainer;
  o["backend"] = s.backend;
  o["status"] = statusText();
  o["status_backend"] = status_->backendText();
  QJsonArray folds;
  for (int k = 0; k < fold_grid_->columnCount(); ++k) {
    QJsonObject f;
    f["fold"] = k;
    const auto e = s.fold_entry(k);
    f["entry"] = e ? QJsonValue(QJsonObject{{"slot", e->slot}, {"step", e->step}}) : QJsonValue();
    QJsonArray slots;
    for (int slot = 0; slot < shown_slot_count(); ++slot) {  // the run's trainer's slots
      const SlotRecord& r = s.folds[static_cast<std::size_t>(k)].slots[slot];
      slots.append(QJsonObject{
          {"index", slot}, {"state", state_name(r.state)}, {"kinds", kinds_json(r.kinds)}});
    }
    f["slots"] = slots;
    folds.append(f);
  }
  o["folds"] = folds;
  QJsonArray types;  // the Slots table's type column, by slot index
  for (int slot = 0; slot < shown_slot_count(); ++slot) types.append(slot_table_->typeOf(slot));
  o["slot_types"] = types;
  QJsonArray frames;  // the entry cells outlined in the slot x fold grid
  for (const auto& [slot, column] : fold_plot_->entries()) {
    const auto e = s.fold_entry(column);
    frames.append(QJsonObject{{"fold", column}, {"slot", slot}, {"step", e ? e->step : -1}});
  }
  o["entry_frames"] = frames;
  QJsonObject grid;
  grid["fold"] = step_grid_->fold();
  const int cols = step_grid_->columnCount();
  grid["first_step"] = cols > 0 ? QJsonValue(0) : QJsonValue();
  grid["last_step"] = cols > 0 ? QJsonValue(cols - 1) : QJsonValue();
  const auto sp = step_plot_->entries();
  grid["entry"] = sp.empty()
                      ? QJsonValue()
                      : QJsonValue(QJsonObject{{"slot", sp[0].first}, {"step", sp[0].second}});
  grid["label"] = stepGridLabel();
  grid["rows"] = step_grid_->rowCount();
  grid["view"] = magnitudeShown() ? "magnitude" : "state";
  QJsonArray jumped_cells;
  for (const auto& [slot, step] : step_plot_->marks())
    jumped_cells.append(QJsonObject{{"slot", slot}, {"step", step}});
  grid["jumped"] = jumped_cells;
  grid["magnitude_range"] =
      QJsonArray{magnitude_plot_->scaleRange().lower, magnitude_plot_->scaleRange().upper};
  o["step_grid"] = grid;
  // Step compare as the panel shows it: growth null where it is infinite (from 0, or nothing
  // finite left).
  if (const auto& c = compare_->model()->comparison()) {
    QJsonArray rows;
    for (const SlotChange& r : c->rows)
      rows.append(
          QJsonObject{{"slot", r.slot},
                      {"growth", std::isfinite(r.growth) ? QJsonValue(r.growth) : QJsonValue()},
                      {"jumped", r.jumped}});
    o["compare"] =
        QJsonObject{{"fold", c->fold},
                    {"step_a", c->step_a},
                    {"step_b", c->step_b},
                    {"how", compare_how_},
                    {"rows", rows},
                    {"buffers", buffer_compare_.isEmpty()
                                    ? QJsonValue()
                                    : QJsonValue(QJsonObject::fromVariantMap(buffer_compare_))}};
  } else {
    o["compare"] = QJsonValue();
  }
  o["sweep"] = sweepState();
  QJsonArray events;  // with the detail the events view shows
  for (std::size_t i = 0; i < s.events.size(); ++i) {
    const SnapshotEvent& e = s.events[i];
    events.append(QJsonObject{
        {"kind", kind_text(e.kind)},
        {"fold", e.fold},
        {"step", e.step},
        {"slot", e.entry_slot},
        {"detail", events_->index(static_cast<int>(i), EventsModel::Detail).data().toString()},
        {"dump", e.dump}});
  }
  o["events"] = events;
  if (const BufferStatsPtr st = inspector_->stats()) {
    o["inspector"] =
        QJsonObject{{"slot", st->slot},
                    {"fold", st->fold},
                    {"step", st->step},
                    {"source", source_text(st->source)},
                    {"reason", st->source == BufferStats::Source::None ? st->origin : QString()},
                    {"checkpoint_step", st->checkpoint_step},
                    {"steps_run", st->steps_run},
                    {"other_backend", st->other_backend},
                    {"finite_min", st->computed ? QJsonValue(st->finite_min) : QJsonValue()},
                    {"finite_max", st->computed ? QJsonValue(st->finite_max) : QJsonValue()},
                    {"count", static_cast<qint64>(st->count)},
                    {"computed", st->computed},
                    {"nan", static_cast<qint64>(st->nan)},
                    {"posinf", static_cast<qint64>(st->posinf)},
                    {"neginf", static_cast<qint64>(st->neginf)},
                    {"finite", static_cast<qint64>(st->computed ? st->finite() : 0)},
                    {"header", st->origin},
                    {"summary", inspector_->summaryText()},
                    {"path", st->path}};
  } else {
    o["inspector"] = QJsonValue();
  }
  QJsonArray series, health;
  for (int i = 0; i < MetricsPlot::kSeriesCount; ++i)
    if (metrics_->seriesVisible(i)) series.append(MetricsPlot::seriesName(i));
  for (const HealthSeriesKey& k : metrics_->healthSeries()) health.append(health_series_name(k));
  o["metrics"] = QJsonObject{
      {"series", series},
      {"health_series", health},
      {"log_scale", metrics_->logScale()},
      {"step_range", QJsonArray{metrics_->stepRange().lower, metrics_->stepRange().upper}}};
  o["selection"] =
      QJsonObject{{"fold", sel_->fold()}, {"step", sel_->step()}, {"slot", sel_->slot()}};
  o["slot_filter"] = slot_filter_->text();
  o["slot_table_rows"] = slot_proxy_->rowCount();  // the slot table's rows (the filter applied)
  o["window_title"] = windowTitle();
  QJsonArray inj, bps;
  for (const auto& i : s.injections) inj.append(QString::fromStdString(i));
  for (int b : s.breakpoints) bps.append(b);
  o["injections"] = inj;
  o["breakpoints"] = bps;
  o["status"] = statusText();
  return o;
}

bool MainWindow::writeViewState(const QString& path) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  return f.write(QJsonDocument(viewState()).toJson()) > 0;
}

}  // namespace nanscope::gui
