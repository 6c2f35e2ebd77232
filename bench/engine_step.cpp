// bench/engine_step: a step command -> update ready, headless (the engine controller without a
// window), default size. The controller picks the CUDA backend when a device is present and the
// CPU backend otherwise; the bench says which one it timed. Then the same at a small size after
// 20,000 steps of history, where a step that waited for its run file to be rewritten (about 100 ms
// at that length) would show it.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <algorithm>
#include <cstdio>

#include "controller/engine_controller.h"

#include "bench_util.h"

using namespace nanscope;
using nanscope::bench::median;
using namespace nanscope::gui;

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  qRegisterMetaType<UpdatePtr>();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  EngineController ctrl;
  QElapsedTimer timer;
  std::vector<double> command_ms;
  bool measuring = false;
  QString backend;
  std::int64_t history = 0;
  QObject::connect(&ctrl, &EngineController::updateReady, [&](UpdatePtr u) {
    backend = u->head.backend + " [" + u->head.device + "]";
    history = u->head.global_step;
    if (measuring) command_ms.push_back(timer.nsecsElapsed() / 1e6);
  });
  EngineSettings s;
  s.out_root = "/tmp/nanscope_bench_engine_step";
  ctrl.RT_configure(s);
  for (int i = 0; i < 3; ++i) ctrl.RT_step();  // warm-up
  measuring = true;
  for (int r = 0; r < reps; ++r) {
    timer.start();
    ctrl.RT_step();
  }
  std::printf("bench engine_step: default config, %s backend, %d reps\n",
              backend.toStdString().c_str(), reps);
  std::printf("step command -> update ready  %.2f ms median\n", median(command_ms));

  // A long stepped run: 20,000 steps of history at a small size (run to there), then steps.
  measuring = false;
  EngineSettings small;
  small.out_root = s.out_root;
  small.sets = {"data.bars=600",      "model.batch=16",          "model.hidden=16",
                "model.bottleneck=8", "model.iqn_n=4",           "model.iqn_n_target=4",
                "model.iqn_k=4",      "model.iqn_cos=8",         "model.aux_hidden=8",
                "run.folds=1",        "run.steps_per_fold=40000"};
  ctrl.RT_configure(small);
  {
    QEventLoop loop;
    QObject::connect(&ctrl, &EngineController::updateReady, &loop, [&](UpdatePtr u) {
      if (u->head.global_step >= 20'000) ctrl.requestPause();
    });
    QObject::connect(&ctrl, &EngineController::runStateChanged, &loop, [&](bool running) {
      if (!running) loop.quit();
    });
    ctrl.RT_run(EngineController::UntilEnd);
    loop.exec();
  }
  command_ms.clear();
  measuring = true;
  for (int r = 0; r < reps; ++r) {
    timer.start();
    ctrl.RT_step();
  }
  std::printf("step command -> update ready, small size after %lld steps  %.2f ms median\n",
              static_cast<long long>(history - reps), median(command_ms));
  return 0;
}
