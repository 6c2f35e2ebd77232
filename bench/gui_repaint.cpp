// bench/gui_repaint: what an update costs the window, and a big step grid (offscreen, medians).
//
// update_cost: the window holds H steps of history (folds of 400 steps, a fire in every fold, as
// a long walk-forward run leaves them), then takes updates of 5 new steps each (about what a
// 10-updates-per-second run sends on the CPU backend) and repaints: apply, models, plots, a full
// repaint. Measured at H = 100 and H = 100,000 in the same run; the ratio says whether an update
// costs what changed (target < 2) or what the run holds.
// step_grid: a 37 x 10,000 slot x step grid (one fold) rebuilt and replotted.
// Run with QT_QPA_PLATFORM=offscreen (NANSCOPE_BENCH_PARTS=1 also times each plot's replot).
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <algorithm>
#include <cstdio>

#include "plots/grid_plot.h"
#include "plots/metrics_plot.h"
#include "widgets/main_window.h"

#include "bench_util.h"

using namespace nanscope;
using nanscope::bench::median;
using namespace nanscope::gui;

namespace {

constexpr int kStepsPerFold = 400;

StepRow synthetic_row(std::size_t g) {
  StepRow r;
  r.flags.assign(kBuiltinSlotCount, 0);
  r.fold = static_cast<int>(g / kStepsPerFold);
  r.step = static_cast<int>(g % kStepsPerFold);
  r.checked = SlotSet::all(kBuiltinSlotCount);
  if (r.step >= 200) r.flags[kAuxPredNb] = kKindNaN;  // each fold fires from its step 200 on
  r.losses.total = r.step >= 200 ? qQNaN() : 3.0 + 0.001 * r.step;
  r.losses.c51 = 3.9 - 0.0001 * r.step;
  r.losses.grad_norm = 1.0;
  return r;
}

FoldFlags synthetic_fold(int fold, int steps) {
  FoldFlags f;
  f.fold = fold;
  f.steps = steps;
  f.slots.resize(kBuiltinSlotCount);
  if (steps > 200) {
    f.slots[kAuxPredNb] = SlotRecord{SlotState::Fired, kKindNaN, 200, 2, 0};
    derive_entries(*SlotTable::builtin(), f);
  }
  return f;
}

// The update that brings the window from `have` steps to `want` steps.
UpdatePtr grow(std::size_t have, std::size_t want, quint64 seq, std::size_t have_events) {
  auto u = std::make_shared<SnapshotUpdate>();
  u->seq = seq;
  u->epoch = 1'000'000;
  u->reset = have == 0;
  u->head.seq = seq;
  u->head.source = "live";
  u->head.scenario = "bench";
  u->head.backend = "cpu";
  u->head.folds_total = static_cast<int>(want / kStepsPerFold) + 1;
  u->head.steps_per_fold = kStepsPerFold;
  u->head.global_step = static_cast<std::int64_t>(want);
  u->head.fold = static_cast<int>(want / kStepsPerFold);
  u->head.step = static_cast<int>(want % kStepsPerFold);
  u->first_step = have;
  for (std::size_t g = have; g < want; ++g) u->steps.push_back(synthetic_row(g));
  const int first_fold = have == 0 ? 0 : static_cast<int>((have - 1) / kStepsPerFold);
  const int last_fold = static_cast<int>((want - 1) / kStepsPerFold);
  u->first_fold = static_cast<std::size_t>(first_fold);
  for (int k = first_fold; k <= last_fold; ++k) {
    const int steps = std::min<int>(kStepsPerFold, static_cast<int>(want) - k * kStepsPerFold);
    u->folds.push_back(synthetic_fold(k, steps));
  }
  u->first_event = have_events;
  // a first fire at step 200 of each fold the new steps complete up to
  for (std::size_t g = have; g < want; ++g)
    if (g % kStepsPerFold == 200)
      u->events.push_back(SnapshotEvent{static_cast<int>(g / kStepsPerFold),
                                        200,
                                        EventKind::FirstFire,
                                        kAuxPredNb,
                                        {},
                                        std::nullopt});
  return u;
}

std::size_t events_upto(std::size_t steps) {
  return steps / kStepsPerFold + (steps % kStepsPerFold > 200 ? 1 : 0);
}

double update_cost(MainWindow& w, std::size_t history, int reps, quint64& seq) {
  w.UI_applyUpdate(grow(0, history, ++seq, 0));
  QApplication::processEvents();
  std::size_t have = history;
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    auto u = grow(have, have + 5, ++seq, events_upto(have));
    QElapsedTimer t;
    t.start();
    w.UI_applyUpdate(u);
    w.repaint();
    for (auto* p : w.findChildren<QCustomPlot*>()) p->replot(QCustomPlot::rpImmediateRefresh);
    QApplication::processEvents();
    ms.push_back(t.nsecsElapsed() / 1e6);
    have += 5;
  }
  if (w.snapshot()->steps.size() != have)
    std::fprintf(stderr, "bench: the window did not take the updates\n");
  if (getenv(
          "NANSCOPE_BENCH_PARTS")) {  // where an update's time goes: each plot, the window, apply
    for (auto* p : w.findChildren<QCustomPlot*>()) {
      QElapsedTimer t;
      t.start();
      for (int i = 0; i < 10; ++i) p->replot(QCustomPlot::rpImmediateRefresh);
      std::fprintf(stderr, "  %s %.2f ms\n", p->metaObject()->className(), t.nsecsElapsed() / 1e7);
    }
    QElapsedTimer t;
    t.start();
    for (int i = 0; i < 10; ++i) w.repaint();
    std::fprintf(stderr, "  window repaint %.2f ms\n", t.nsecsElapsed() / 1e7);
    t.start();
    for (int i = 0; i < 10; ++i)
      w.UI_applyUpdate(grow(have + 5 * i, have + 5 * i + 5, ++seq, events_upto(have + 5 * i)));
    std::fprintf(stderr, "  apply %.2f ms\n", t.nsecsElapsed() / 1e7);
  }
  return median(ms);
}

// One fold of `steps` checked steps, a NaN in slot (step mod the slot count) every `every` steps.
Snapshot one_fold_grid(std::size_t steps, std::size_t every) {
  Snapshot s;
  for (std::size_t g = 0; g < steps; ++g) {
    StepRow r;
    r.flags.assign(kBuiltinSlotCount, 0);
    r.step = static_cast<int>(g);
    r.checked = SlotSet::all(kBuiltinSlotCount);
    r.flags[g % kBuiltinSlotCount] = (g % every == 0) ? kKindNaN : 0;
    s.steps.push_back(r);
  }
  s.fold_begin = {0};
  s.folds.resize(1);
  s.folds[0].slots.resize(kBuiltinSlotCount);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const int reps = 41;
  EngineSettings es;
  es.out_root = "/tmp/nanscope_bench_gui";
  es.sets = {"data.bars=600",      "model.batch=16",  "model.hidden=16",
             "model.bottleneck=8", "model.iqn_n=4",   "model.iqn_n_target=4",
             "model.iqn_k=4",      "model.iqn_cos=8", "model.aux_hidden=8"};
  MainWindow w(es);
  w.resize(1500, 950);
  w.show();
  // The live session's first update arrives once; after it the engine sends nothing unasked.
  {
    QEventLoop loop;
    QObject::connect(&w, &MainWindow::snapshotShown, &loop, &QEventLoop::quit);
    QTimer::singleShot(20000, &loop, &QEventLoop::quit);
    if (!w.snapshot()) loop.exec();
  }
  QApplication::processEvents();

  quint64 seq = 1'000'000;
  const double small = update_cost(w, 100, reps, seq);
  const double large = update_cost(w, 100'000, reps, seq);

  // A 37 x 10,000 slot x step grid in one fold.
  Snapshot big = one_fold_grid(10'000, 7);
  SlotGridModel model(SlotGridModel::Steps);
  model.setView(&big);
  GridPlot plot(&model);
  plot.resize(1200, 700);
  plot.show();
  QApplication::processEvents();
  std::vector<double> grid_ms;
  for (int r = 0; r < 21; ++r) {
    QElapsedTimer t;
    t.start();
    model.refresh(true);  // a reset -> rebuild of the colour map
    plot.replot(QCustomPlot::rpImmediateRefresh);
    grid_ms.push_back(t.nsecsElapsed() / 1e6);
  }
  // A 37 x 100,000 slot x step grid (one fold): every column pooled into the plot's pixels, then
  // zoomed onto 200 columns around a fire and panned (each pan rebuilds the visible cells).
  Snapshot huge = one_fold_grid(100'000, 97);
  SlotGridModel huge_model(SlotGridModel::Steps);
  huge_model.setView(&huge);
  GridPlot huge_plot(&huge_model);
  huge_plot.resize(1200, 700);
  huge_plot.show();
  QApplication::processEvents();
  std::vector<double> huge_ms, zoom_ms;
  for (int r = 0; r < 21; ++r) {
    QElapsedTimer t;
    t.start();
    huge_model.refresh(true);
    huge_plot.replot(QCustomPlot::rpImmediateRefresh);
    huge_ms.push_back(t.nsecsElapsed() / 1e6);
  }
  for (int r = 0; r < 21; ++r) {
    QElapsedTimer t;
    t.start();
    huge_plot.setColumnRange(54'000 + r, 54'200 + r);  // a pan of the zoomed view
    huge_plot.replot(QCustomPlot::rpImmediateRefresh);
    zoom_ms.push_back(t.nsecsElapsed() / 1e6);
  }
  std::printf("bench gui_repaint (offscreen, medians of %d updates of 5 steps)\n", reps);
  std::printf("update_cost  100 steps of history       %.2f ms\n", small);
  std::printf("update_cost  100,000 steps of history   %.2f ms\n", large);
  std::printf("update_cost  ratio 100,000 / 100        %.2f (target < 2)\n", large / small);
  std::printf("step_grid    37 x 10,000 replot         %.2f ms median (target <= 16 ms)\n",
              median(grid_ms));
  std::printf(
      "step_grid    37 x 100,000 replot        %.2f ms median (target <= 16 ms; %.0f columns per "
      "pixel)\n",
      median(huge_ms), 100'000.0 / huge_plot.axisRect()->width());
  std::printf("step_grid    37 x 100,000 zoomed to 200 columns, pan + replot  %.2f ms median\n",
              median(zoom_ms));
  return 0;
}
