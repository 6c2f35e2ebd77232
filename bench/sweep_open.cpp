// bench/sweep_open: a sweep directory of 200 tasks x 6 folds opened in the sweep view, on the
// engine's reader and the view's model, timed (docs/sweeps.md: under 2 s on a 2-core machine).
// The tasks' run files are one real 6 x 400-step run file (a small model, a fire in fold 3),
// copied; each task has its status marker. Usage: bench_sweep_open [WORK_DIR] [REPEATS]
#include <QApplication>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/config_io.h"
#include "session/session.h"
#include "sweep/sweep_status.h"
#include "widgets/sweep_panel.h"

#include "bench_util.h"

using namespace nanscope;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const fs::path work =
      argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "nanscope_sweep_open";
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  fs::remove_all(work);
  fs::create_directories(work / "tasks");
  // One real run file: 6 folds, a small model, a fire in fold 3.
  ConfigBuilder b;
  for (const char* s :
       {"run.folds=6", "run.steps_per_fold=400", "data.bars=6000", "model.batch=8",
        "model.hidden=8", "model.bottleneck=4", "model.iqn_n=2", "model.iqn_n_target=2",
        "model.iqn_k=2", "model.iqn_cos=4", "model.aux_hidden=4", "halt.on_fire=never"})
    b.set(s);
  const Config c = b.build();
  SessionOptions o;
  o.out_dir = (work / "one").string();
  o.injections.push_back(parse_injection("slot:h_s2@3:2"));
  {
    Session s(c, make_cpu_backend(c), o);
    s.run();
  }
  // 4 variants x 50 seeds = 200 tasks.
  std::string seeds;
  for (int k = 0; k < 50; ++k) seeds += (k ? ", " : "") + std::to_string(k);
  std::ofstream(work / "sweep.toml")
      << "[sweep]\nname = \"bench\"\nseeds = [" << seeds << "]\nbackend = \"cpu\"\n"
      << "set = [\"run.folds=6\"]\n"
      << "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n[[variant]]\nname = \"c\"\n"
      << "[[variant]]\nname = \"d\"\n";
  const SweepSpec spec = read_sweep_spec((work / "sweep.toml").string());
  for (const SweepTask& t : sweep_tasks(spec)) {
    const fs::path d = work / "tasks" / t.name;
    fs::create_directories(d / "run");
    fs::copy_file(work / "one" / "run.h5", d / "run" / "run.h5");
    write_task_status(d.string(), {1, ""});
  }
  gui::SweepPanel panel;
  panel.resize(1400, 600);
  panel.show();
  std::vector<double> read_ms, total_ms;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto status = std::make_shared<const SweepStatus>(read_sweep_status(work.string()));
    const auto t1 = std::chrono::steady_clock::now();
    panel.setStatus(status);
    panel.table()->viewport()->repaint();
    QApplication::processEvents();
    const auto t2 = std::chrono::steady_clock::now();
    read_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    total_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
    if (status->tasks.size() != 200 || status->folds != 6 || status->fired != 200) {
      std::fprintf(stderr,
                   "bench sweep_open: the sweep read wrong (%zu tasks, %d folds, %d fired)\n",
                   status->tasks.size(), status->folds, status->fired);
      return 1;
    }
  }
  std::printf(
      "bench sweep_open: 200 tasks x 6 folds, median of %d: read %.1f ms, read and shown %.1f ms "
      "(target < 2000 ms)\n",
      repeats, bench::median(read_ms), bench::median(total_ms));
  fs::remove_all(work);
  return 0;
}
