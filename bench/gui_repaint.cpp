// bench/gui_repaint: snapshot -> repainted window (offscreen), and a 36 x 10,000 step-grid replot,
// medians. Run with QT_QPA_PLATFORM=offscreen. The snapshot comes from a real (small) session.
#include <QApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <cstdio>

#include "controller/engine_controller.h"
#include "core/config_io.h"
#include "plots/grid_plot.h"
#include "widgets/main_window.h"

#include "bench_util.h"

using namespace nanscope;
using nanscope::bench::median;
using namespace nanscope::gui;

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const int reps = 21;
  // A live snapshot of a small run, 60 steps in.
  ConfigBuilder b;
  for (const char* s : {"data.bars=600", "model.batch=16", "model.hidden=16", "model.bottleneck=8",
                        "model.iqn_n=4", "model.iqn_n_target=4", "model.iqn_k=4", "model.iqn_cos=8",
                        "model.aux_hidden=8", "run.folds=2", "run.steps_per_fold=60"})
    b.set(s);
  Config c = b.build();
  Session session(c, make_cpu_backend(c));
  session.run(RunUntil{RunUntil::Kind::Steps, 60});
  EngineSettings es;
  es.out_root = "/tmp/nanscope_bench_gui";
  MainWindow w(es);
  w.resize(1500, 950);
  w.show();
  QApplication::processEvents();

  std::vector<double> window_ms;
  for (int r = 0; r < reps; ++r) {
    auto snap = make_snapshot(session, 2'000'000 + r, false, 0, "healthy");
    QElapsedTimer t;
    t.start();
    w.UI_showSnapshot(snap);
    w.repaint();
    for (auto* p : w.findChildren<QCustomPlot*>()) p->replot(QCustomPlot::rpImmediateRefresh);
    QApplication::processEvents();
    window_ms.push_back(t.nsecsElapsed() / 1e6);
  }

  // A 36 x 10,000 slot x step grid.
  auto big = std::make_shared<Snapshot>();
  big->step_flags.resize(10000);
  big->step_fold.assign(10000, 0);
  big->step_in_fold.resize(10000);
  for (int i = 0; i < 10000; ++i) {
    big->step_in_fold[i] = i;
    big->step_flags[i][i % kSlotCount] = (i % 7 == 0) ? kKindNaN : 0;
  }
  big->folds.resize(1);
  SlotGridModel model(SlotGridModel::Steps);
  model.setSnapshot(big);
  model.setFold(0);
  GridPlot plot(&model);
  plot.resize(1200, 700);
  plot.show();
  QApplication::processEvents();
  std::vector<double> grid_ms;
  for (int r = 0; r < reps; ++r) {
    QElapsedTimer t;
    t.start();
    model.setSnapshot(big);  // dataChanged -> rebuild of the colour map
    plot.replot(QCustomPlot::rpImmediateRefresh);
    grid_ms.push_back(t.nsecsElapsed() / 1e6);
  }
  std::printf("bench gui_repaint (offscreen, %d reps)\n", reps);
  std::printf("snapshot -> repainted window   %.2f ms median (target <= 30 ms)\n", median(window_ms));
  std::printf("36 x 10,000 step grid replot   %.2f ms median (target <= 16 ms)\n", median(grid_ms));
  return 0;
}
