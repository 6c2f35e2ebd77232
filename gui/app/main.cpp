// nanscope: the Qt workbench. Live mode drives the trainer on an engine thread; `nanscope
// PATH/run.h5` opens a finished (or running) run's files offline.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>

#include "core/version.h"
#include "widgets/inspector_widget.h"
#include "widgets/main_window.h"

using namespace nanscope::gui;

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("nanscope");
  QApplication::setApplicationVersion(nanscope::kVersion);
  QCommandLineParser p;
  p.setApplicationDescription("nanscope: hunt NaNs in a deep-RL trainer");
  p.addHelpOption();
  p.addVersionOption();
  p.addPositionalArgument("run", "a run file (run.h5) to open offline");
  QCommandLineOption scenario("scenario", "scenario preset", "name", "healthy");
  QCommandLineOption set("set", "config override KEY=VALUE (repeatable)", "key=value");
  QCommandLineOption config("config", "TOML config file", "file");
  QCommandLineOption out("out-root", "where live runs write their files", "dir", "runs");
  QCommandLineOption shot("screenshot", "render the window to a PNG and quit", "file");
  QCommandLineOption after("screenshot-after", "fire | steps:N | inspect (fire, then the entry's dump)", "when", "steps:20");
  for (auto* o : {&scenario, &set, &config, &out, &shot, &after}) p.addOption(*o);
  p.process(app);

  EngineSettings s;
  s.scenario = p.value(scenario);
  s.sets = p.values(set);
  s.config_file = p.value(config);
  s.out_root = p.value(out);
  MainWindow w(s);
  w.resize(1500, 950);
  w.show();
  if (!p.positionalArguments().isEmpty()) w.UI_openRunFile(p.positionalArguments().first());

  if (p.isSet(shot)) {
    // Screenshot mode (docs/): drive the window as a user would, then grab it.
    const QString file = p.value(shot), when = p.value(after);
    auto* timer = new QTimer(&w);
    int phase = 0;
    QObject::connect(timer, &QTimer::timeout, &w, [&, timer]() mutable {
      auto snap = w.snapshot();
      if (!snap) return;
      if (phase == 0) {
        if (when.startsWith("steps:")) {
          for (int i = 0; i < when.mid(6).toInt(); ++i) w.UI_step();
        } else {
          w.UI_run(EngineController::UntilFire);
        }
        phase = 1;
        return;
      }
      if (phase == 1) {
        const bool done = when.startsWith("steps:") ? snap->global_step >= when.mid(6).toInt()
                                                     : (!w.running() && snap->entry.has_value());
        if (!done) return;
        const int slot = snap->entry ? snap->entry->slot : 17;
        if (when != "inspect") w.UI_selectSlot(slot);  // the live buffer
        if (when == "inspect")  // the buffer as its check saw it, from the dump
          for (const auto& e : snap->events)
            if (e.kind == "first_fire" && !e.dump.isEmpty()) {
              w.UI_openDump(e.dump);
              break;
            }
        phase = 2;
        return;
      }
      if (++phase < 8) return;  // let the views settle
      w.grab().save(file);
      timer->stop();
      QApplication::quit();
    });
    timer->start(150);
  }
  return app.exec();
}
