// The buffer inspector's one rule: it shows the buffer of the cell the user selected (fold, step,
// slot): the newest step's (live), a first-fire dump's, or any other step's recomputed from a
// checkpoint (time travel); or it says why it cannot, and offers, as explicit choices, the cells
// whose buffers are kept: the newest step (live) and the slot's first-fire dump in the fold. It
// never puts another cell's buffer on screen: a newer live step, a dump of another step, a
// recomputation asked for before the last one, or anything of a file no longer shown is dropped
// when it arrives.
#include <QFileInfo>
#include <QTableView>

#include "plots/grid_plot.h"
#include "plots/magnitude_plot.h"

#include "widgets/inspector_widget.h"
#include "widgets/main_window.h"

#include <QSortFilterProxyModel>

namespace nanscope::gui {

const SnapshotEvent* MainWindow::dumpOfCell(int slot, int fold, int step) const {
  if (fold < 0 || static_cast<std::size_t>(fold) >= view_->folds.size()) return nullptr;
  if (view_->folds[static_cast<std::size_t>(fold)].slots[slot].first_step != step) return nullptr;
  for (const auto& e : view_->events)
    if (e.kind == EventKind::FirstFire && e.fold == fold && e.step == step && !e.dump.isEmpty())
      return &e;
  return nullptr;
}

std::pair<int, int> MainWindow::newestCell() const {
  if (view_->steps.empty() || view_->fold_begin.empty()) return {-1, -1};
  const std::size_t last = view_->steps.size() - 1;
  int fold = 0;
  while (static_cast<std::size_t>(fold + 1) < view_->fold_begin.size() &&
         view_->fold_begin[static_cast<std::size_t>(fold + 1)] <= last)
    ++fold;
  return {fold, static_cast<int>(last - view_->fold_begin[static_cast<std::size_t>(fold)])};
}

void MainWindow::UI_selectSlot(int slot) {
  sel_->setSlot(slot);
  // Offline, a slot picked without a step (the table) is shown where it first fired in the fold.
  if (offline_ && sel_->step() < 0 && slot >= 0 &&
      static_cast<std::size_t>(sel_->fold()) < view_->folds.size()) {
    const auto first = view_->folds[static_cast<std::size_t>(sel_->fold())].slots[slot].first_step;
    if (first >= 0) sel_->setStep(static_cast<int>(first));
  }
  markSelection();
  inspectSelection();
}

void MainWindow::markSelection() {
  // The table's row through the name filter (a filtered-out slot, or none selected, has no row).
  // Selected through its selection model: QTableView::selectRow would read a modifier held for a
  // shortcut (Ctrl+E) as "toggle this row" and leave another row highlighted.
  const QModelIndex row =
      sel_->slot() < 0
          ? QModelIndex()
          : slot_proxy_->mapFromSource(slot_table_->index(row_of_slot(sel_->slot()), 0));
  if (row.isValid()) {
    slot_view_->selectionModel()->setCurrentIndex(
        row, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    slot_view_->scrollTo(row);
  } else {
    slot_view_->selectionModel()->clearSelection();
  }
  fold_plot_->setSelection(sel_->slot(), sel_->fold());
  step_plot_->setSelection(sel_->slot(), sel_->step());
  magnitude_plot_->setSelection(sel_->slot(), sel_->step());
}

void MainWindow::inspectSelection() {
  const int slot = sel_->slot();
  inspect_want_ = InspectWanted{};
  ctrl_->supersedeTravel(0);  // a recomputation still running for another cell stops
  if (slot < 0) {
    ctrl_->requestInspect(-1);
    inspector_->clear();
    return;
  }
  inspect_want_.slot = slot;
  inspect_want_.fold = sel_->fold();
  inspect_want_.step = sel_->step();
  if (const SnapshotEvent* e = dumpOfCell(slot, sel_->fold(), sel_->step())) {
    ctrl_->requestInspect(-1);
    inspect_want_.dump = QFileInfo(e->dump).absoluteFilePath();
    const QString path = e->dump;
    post([path, slot](EngineController* c) { c->RT_openDump(path, slot); });
    return;
  }
  const bool newest = newestCell() == std::make_pair(sel_->fold(), sel_->step());
  if (!offline_ && have_live_ && (sel_->step() < 0 || newest)) {
    inspect_want_.live = true;
    if (sel_->step() < 0) inspect_want_.fold = -1;  // the newest step, wherever it is
    ctrl_->requestInspect(slot);                    // followed at every update from now on
    return;
  }
  ctrl_->requestInspect(-1);
  if (sel_->step() >= 0) {
    requestTravel();
    return;
  }
  showNoBuffer();
}

// Time travel: the selected cell's buffer recomputed on the engine thread from the latest
// checkpoint at or before it; meanwhile the inspector says so, with the steps done.
void MainWindow::requestTravel() {
  inspect_want_.travel = ++travel_generation_;
  ctrl_->supersedeTravel(inspect_want_.travel);
  onTravelProgress(inspect_want_.travel, 0, 0);
  const int slot = sel_->slot(), fold = sel_->fold(), step = sel_->step(),
            generation = inspect_want_.travel;
  const QString file = offline_ ? view_->source : QString();
  post([slot, fold, step, file, generation](EngineController* c) {
    c->RT_materialize(slot, fold, step, file, generation);
  });
}

void MainWindow::onTravelProgress(int generation, int done, int total) {
  if (generation != inspect_want_.travel) return;
  BufferStats s = cell_without_buffer(inspect_want_.slot, inspect_want_.fold, inspect_want_.step,
                                      BufferStats::Source::Recomputing, generation, {});
  s.origin =
      QString("fold %1, step %2: recomputing from its checkpoint%3")
          .arg(s.fold)
          .arg(s.step)
          .arg(total > 0 ? QString(" (%1 of %2 steps)").arg(done).arg(total) : QString("..."));
  inspector_->setStats(std::make_shared<const BufferStats>(std::move(s)));
}

bool MainWindow::inspectPending() const {
  if (inspect_want_.travel != 0) return true;
  if (inspect_want_.dump.isEmpty()) return false;
  const BufferStatsPtr shown = inspector_->stats();
  return !shown || shown->source != BufferStats::Source::Dump || shown->path != inspect_want_.dump;
}

void MainWindow::showNoBuffer(const QString& why) {
  const int slot = sel_->slot();
  BufferStats none;
  none.slot = slot;
  none.exists = true;
  none.computed = false;
  none.source = BufferStats::Source::None;
  none.fold = sel_->fold();
  none.step = sel_->step();
  const auto [live_fold, live_step] = newestCell();
  if (!offline_ && have_live_ && live_fold == sel_->fold()) none.live_step = live_step;
  if (static_cast<std::size_t>(sel_->fold()) < view_->folds.size()) {
    const auto first = view_->folds[static_cast<std::size_t>(sel_->fold())].slots[slot].first_step;
    if (first >= 0 && dumpOfCell(slot, sel_->fold(), static_cast<int>(first)))
      none.dump_step = static_cast<int>(first);
  }
  QStringList kept;
  if (none.live_step >= 0) kept << QString("the newest step's (step %1)").arg(none.live_step);
  if (none.dump_step >= 0)
    kept << QString("this slot's first-fire dump (step %1)").arg(none.dump_step);
  none.origin = !why.isEmpty() ? why
                : sel_->step() < 0
                    ? QString("fold %1: select a step (grid) to see its buffer").arg(sel_->fold())
                    : QString(
                          "no buffer of fold %1, step %2 is kept: nanscope keeps the newest "
                          "step's buffers and a dump of each slot's first fire in a fold%3")
                          .arg(sel_->fold())
                          .arg(sel_->step())
                          .arg(kept.isEmpty() ? QString(" (this slot has neither in this fold)")
                                              : "; there is " + kept.join(" and "));
  inspector_->setStats(std::make_shared<const BufferStats>(std::move(none)));
}

void MainWindow::onInspectReady(BufferStatsPtr s) {
  const InspectWanted& w = inspect_want_;
  if (s->generation != 0) {  // time travel's answer: only the newest request's
    if (s->generation != w.travel || s->slot != w.slot || s->fold != w.fold || s->step != w.step)
      return;
    inspect_want_.travel = 0;
    if (s->source == BufferStats::Source::None && s->exists)
      showNoBuffer(s->origin);  // why not, with what is kept instead
    else
      inspector_->setStats(std::move(s));
    return;
  }
  if (s->source == BufferStats::Source::Live) {
    if (offline_ || !w.live || s->slot != w.slot) return;  // not what the selection asks for now
    if (w.step >= 0 && (s->fold != w.fold || s->step != w.step)) {
      // The run moved on: the selected step's buffer is no longer the live one. Stop following;
      // recompute it from its checkpoint.
      ctrl_->requestInspect(-1);
      inspect_want_.live = false;
      requestTravel();
      return;
    }
    inspector_->setStats(std::move(s));
    return;
  }
  if (w.dump.isEmpty() || s->path != w.dump) return;  // another file's, or asked before this one
  // A dump of another trainer than the shown run's (its slot is not the shown table's slot of that
  // index and name): shown in the inspector, never made the grids' selection.
  const bool shown_runs_slot =
      shown_table().contains(s->slot) &&
      (s->slot_name.isEmpty() || QString::fromStdString(shown_slot(s->slot).name) == s->slot_name);
  if (w.any_slot && !shown_runs_slot) {
    if (!have_view_ && !have_live_) {
      problem_ = "dump: " + s->path + " (File > Open a run file, or File > Back to live run)";
      updateProgress();
    }
  } else if (w.any_slot) {
    // A dump opened by hand: the selection is its cell, so the grids and the table agree.
    sel_->setSlot(s->slot);
    if (!have_view_ && !have_live_) {
      problem_ = "dump: " + s->path + " (File > Open a run file, or File > Back to live run)";
      updateProgress();
    } else if (static_cast<std::size_t>(s->fold) < view_->folds.size()) {
      sel_->setFold(s->fold);
      sel_->setStep(s->step);
      sel_->setFoldChosen(true);
      refreshViews(false);
    }
    markSelection();
  } else if (s->slot != w.slot) {
    return;
  }
  inspector_->setStats(std::move(s));
}

}  // namespace nanscope::gui
