// bench/engine_step: a step command -> update ready, headless (the engine controller without a
// window), default size. The controller picks the CUDA backend when a device is present and the
// CPU backend otherwise; the bench says which one it timed.
#include <QCoreApplication>
#include <QElapsedTimer>
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
  QObject::connect(&ctrl, &EngineController::updateReady, [&](UpdatePtr u) {
    backend = u->head.backend + " [" + u->head.device + "]";
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
  return 0;
}
