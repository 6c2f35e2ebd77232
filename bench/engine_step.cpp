// bench/engine_step: a step command -> snapshot ready, headless (the engine controller without a
// window), default size. The spec asks for it on the GPU; this version has only the CPU backend, so
// it reports the CPU figure and splits it into the step and the snapshot.
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
  qRegisterMetaType<SnapshotPtr>();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  EngineController ctrl;
  QElapsedTimer timer;
  std::vector<double> command_ms;
  bool measuring = false;
  QObject::connect(&ctrl, &EngineController::snapshotReady, [&](SnapshotPtr) {
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
  std::printf("bench engine_step: default config, CPU backend, %d reps\n", reps);
  std::printf("step command -> snapshot ready  %.2f ms median\n", median(command_ms));
  return 0;
}
