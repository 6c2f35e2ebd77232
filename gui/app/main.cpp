// nanscope: the Qt workbench. Live mode drives the trainer on an engine thread; `nanscope
// PATH/run.h5` opens a finished (or running) run's files offline, with no live session.
#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "backend_choice.h"
#include "core/slot_table.h"
#include "core/version.h"
#include "io/file_guard.h"
#include "plots/grid_plot.h"
#include "plots/metrics_plot.h"
#include "style/colour_vision.h"
#include "widgets/inspector_widget.h"
#include "widgets/main_window.h"

using namespace nanscope::gui;

namespace {

struct Options {
  EngineSettings settings;
  QString open_file, screenshot, after, state_json, view, simulate;
  struct Cell {
    int fold, step, slot;
  };
  std::optional<Cell> select;  // --screenshot-select FOLD:STEP:SLOT
  QString usage_error;         // a command line that could not be read: said, exit 2
};

// The command line, read before any window system is needed: --help and --version work without a
// display.
Options parse(int argc, char** argv) {
  QCoreApplication probe(argc, argv);
  QCoreApplication::setApplicationName("nanscope");
  QCoreApplication::setApplicationVersion(nanscope::kVersion);
  QCommandLineParser p;
  p.setApplicationDescription(
      "nanscope: hunt NaNs in a deep-RL trainer. Without a file: a live run of the scenario (F10 "
      "steps, F5 runs\n"
      "until a slot first fires). With a run file (or a dump): that file, offline.");
  p.addHelpOption();
  p.addVersionOption();
  p.addPositionalArgument("file", "a run file (run.h5) or a dump to open offline");
  QCommandLineOption scenario("scenario", "scenario preset", "name", "healthy");
  QCommandLineOption set("set", "config override KEY=VALUE (repeatable)", "key=value");
  QCommandLineOption config("config", "TOML config file", "file");
  // nanscope-run's run flags, with the same meaning: shorthands for config keys (applied before
  // --set) and fault injections; a bad value is the config's error, as there.
  QCommandLineOption folds("folds", "number of folds (run.folds)", "n");
  QCommandLineOption steps("steps-per-fold", "steps per fold (run.steps_per_fold)", "n");
  QCommandLineOption seed("seed", "seed (run.seed)", "n");
  QCommandLineOption inject("inject", "fault: TARGET@FOLD:STEP[:KIND[:ELEMENT]] (repeatable)",
                            "spec");
  QCommandLineOption backend("backend", "auto|cuda|cpu (default auto)", "name", "auto");
  QCommandLineOption out("out-root", "where live runs write their files", "dir", "runs");
  QCommandLineOption shot("screenshot", "render the window to a PNG and quit", "file");
  QCommandLineOption after("screenshot-after",
                           "fire | steps:N | inspect (fire, then the entry's dump)", "when",
                           "steps:20");
  QCommandLineOption state(
      "state-json", "write what the window shows as JSON (with --screenshot, or on quit)", "file");
  QCommandLineOption view(
      "screenshot-view",
      "before the screenshot: zoom-entry (jump to the entry point, zoom onto it), all-series, "
      "magnitude (the step grid's magnitude view), compare (the Step compare dock in front), "
      "events (the Events dock in front), help-menu, log (the metrics' log scale), "
      "health=SLOT:MEASURE (a slot "
      "health series in the metrics), filter=TEXT (the slot name filter) (comma-separated)",
      "what");
  QCommandLineOption simulate("screenshot-simulate",
                              "save the screenshot as seen with deuteranopia or protanopia",
                              "vision");
  QCommandLineOption select(
      "screenshot-select",
      "before the screenshot and the state JSON: select the cell FOLD:STEP:SLOT (slot by name or "
      "index) as a click would; the inspector shows its buffer or says why there is none",
      "cell");
  for (auto* o : {&scenario, &set, &config, &folds, &steps, &seed, &inject, &backend, &out, &shot,
                  &after, &state, &view, &simulate, &select})
    p.addOption(*o);
  Options o;
  if (!p.parse(QCoreApplication::arguments())) {  // said by main(), in a dialog where one shows
    o.usage_error = p.errorText();
    return o;
  }
  if (p.isSet("help")) p.showHelp(0);
  if (p.isSet("version")) p.showVersion();
  for (const auto& [flag, key] :
       {std::pair{&folds, "run.folds"}, {&steps, "run.steps_per_fold"}, {&seed, "run.seed"}})
    if (p.isSet(*flag)) o.settings.sets << QString("%1=%2").arg(key, p.value(*flag));
  if (p.isSet(inject)) {
    QStringList quoted;
    for (const QString& spec : p.values(inject)) quoted << "\"" + spec + "\"";
    o.settings.sets << "inject.faults=[" + quoted.join(", ") + "]";
  }
  const QString chosen = p.value(backend);
  if (chosen == "cpu") {
    o.settings.cpu_only = true;
  } else if (chosen == "cuda") {
    o.settings.make_backend = [](const nanscope::Config& c) {
      return nanscope::choose_backend("cuda", c, false);
    };
  } else if (chosen != "auto") {
    o.usage_error = QString("--backend %1: expected auto, cuda or cpu").arg(chosen);
    return o;
  }
  o.settings.scenario = p.value(scenario);
  o.settings.sets << p.values(set);
  o.settings.config_file = p.value(config);
  o.settings.out_root = p.value(out);
  if (!p.positionalArguments().isEmpty()) o.open_file = p.positionalArguments().first();
  o.screenshot = p.value(shot);
  o.after = p.value(after);
  o.state_json = p.value(state);
  o.view = p.value(view);
  o.simulate = p.value(simulate);
  if (p.isSet(select)) {
    const QStringList f = p.value(select).split(':');
    bool fold_ok = false, step_ok = false;
    const int fold = f.size() == 3 ? f[0].toInt(&fold_ok) : -1;
    const int step = f.size() == 3 ? f[1].toInt(&step_ok) : -1;
    const auto slot = f.size() == 3 ? nanscope::find_slot(f[2].toStdString()) : std::nullopt;
    if (!fold_ok || !step_ok || fold < 0 || step < 0 || !slot) {
      std::fprintf(stderr,
                   "nanscope: --screenshot-select %s: expected FOLD:STEP:SLOT (numbers from 0, a "
                   "slot name or index 0-35)\n",
                   qPrintable(p.value(select)));
      std::exit(2);
    }
    o.select = Options::Cell{fold, step, *slot};
  }
  return o;
}

// --screenshot-view: what the user would do before looking.
void prepare_view(MainWindow& w, const QString& what) {
  const QStringList parts = what.split(',', Qt::SkipEmptyParts);
  if (parts.contains("all-series"))
    for (int i = 0; i < MetricsPlot::kSeriesCount; ++i) w.metrics()->setSeriesVisible(i, true);
  if (parts.contains("zoom-entry") && w.snapshot() && w.snapshot()->entry) {
    w.UI_jumpToEntry();
    const int step = w.snapshot()->entry->step;
    w.stepPlot()->setColumnRange(step - 12, step + 12);
    Q_EMIT w.stepPlot()->columnRangeChangedByUser(step - 12.0, step + 12.0);  // the metrics follow
  }
  if (parts.contains("magnitude")) w.UI_showMagnitude(true);
  if (parts.contains("log")) w.metrics()->setLogScale(true);
  // health=SLOT:MEASURE adds a slot health series to the metrics; filter=TEXT filters the slots.
  for (const QString& part : parts) {
    if (part.startsWith("health="))
      if (const auto k = parse_health_series(part.mid(7), nullptr))
        w.metrics()->addHealthSeries(*k);
    if (part.startsWith("filter=")) w.UI_setSlotFilter(part.mid(7));
  }
  for (const auto& [part, title] : {std::pair{"compare", "Step compare"}, {"events", "Events"}})
    if (parts.contains(part))
      for (QDockWidget* d : w.findChildren<QDockWidget*>())
        if (d->windowTitle() == title) d->raise();
  if (parts.contains("help-menu"))
    for (QAction* m : w.menuBar()->actions())
      if (m->text().remove('&') == "Help")
        m->menu()->popup(w.mapToGlobal(w.menuBar()->actionGeometry(m).bottomLeft()));
}

// The window (with an open menu drawn where it pops up), as seen with the chosen colour vision.
void save_screenshot(MainWindow& w, const Options& o) {
  QImage img = w.grab().toImage();
  for (QMenu* m : w.findChildren<QMenu*>())
    if (m->isVisible()) {
      QPainter p(&img);
      p.drawPixmap(w.mapFromGlobal(m->pos()), m->grab());
    }
  if (const auto vision = nanscope::parse_enum<ColourVision>(o.simulate.toStdString()))
    img = simulate(img, *vision);
  img.save(o.screenshot);
}

// Screenshot mode (docs/): drive the window as a user would, then grab it (and say what it shows).
void screenshot_when_ready(MainWindow& w, const Options& o) {
  auto* timer = new QTimer(&w);
  auto phase = std::make_shared<int>(0);
  // A file or config refused before anything could be shown: the window with its message, exit 78.
  QObject::connect(&w, &MainWindow::errorShown, &w, [&w, o] {
    if (w.snapshot()) return;
    QTimer::singleShot(300, &w, [&w, o] {
      if (!o.screenshot.isEmpty()) w.grab().save(o.screenshot);
      if (!o.state_json.isEmpty()) w.writeViewState(o.state_json);
      // nanscope-run's codes: 69 a device that cannot be used, 78 a bad config or file.
      QApplication::exit(w.lastErrorClass() == static_cast<int>(ErrorClass::Device) ? 69 : 78);
    });
  });
  QObject::connect(timer, &QTimer::timeout, &w, [&w, o, timer, phase] {
    auto snap = w.snapshot();
    // A dump given on the command line shows in the inspector alone: settle and grab.
    const auto stats = w.inspector()->stats();
    if (!snap && stats && stats->source == BufferStats::Source::Dump && *phase < 2) *phase = 2;
    if (!snap && *phase < 2) return;
    const bool steps = o.after.startsWith("steps:");
    const int n = steps ? o.after.mid(6).toInt() : 0;
    if (*phase == 0) {
      if (!w.offline()) {
        if (steps)
          for (int i = 0; i < n; ++i) w.UI_step();
        else
          w.UI_run(EngineController::UntilFire);
      }
      *phase = 1;
      return;
    }
    if (*phase == 1) {
      if (!snap) return;
      const bool done = w.offline() || (steps ? snap->global_step >= n
                                              : (!w.running() && snap->entry.has_value()));
      if (!done) return;
      if (!w.offline() && snap->entry) {
        if (o.after != "inspect")
          w.UI_selectSlot(snap->entry->slot);  // the live buffer
        else                                   // the buffer as its check saw it, from the dump
          for (const auto& e : snap->events)
            if (e.kind == nanscope::EventKind::FirstFire && !e.dump.isEmpty()) {
              w.UI_openDump(e.dump, e.entry_slot);
              break;
            }
      }
      *phase = 2;
      return;
    }
    if (*phase == 2) {
      prepare_view(w, o.view);
      if (o.select) w.UI_selectCell(o.select->slot, o.select->fold, o.select->step);
    }
    if (++*phase < 8) return;  // let the views settle (and a selected cell's dump load)
    if (!o.screenshot.isEmpty()) save_screenshot(w, o);
    if (!o.state_json.isEmpty()) w.writeViewState(o.state_json);
    timer->stop();
    QApplication::quit();
  });
  timer->start(150);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGXFSZ,
              SIG_IGN);  // a file-size limit fails a write (reported), never kills the window
  // The file check's child (io/file_guard.h): read the file, exit; no window system needed.
  if (argc == 3 && std::string(argv[1]) == "--validate-file")
    return nanscope::read_file_for_validation(argv[2]);
  Options o = parse(argc, argv);
  o.settings.validator = {"/proc/self/exe", "--validate-file"};
  QApplication app(argc, argv);
  if (!o.usage_error.isEmpty()) {
    // Said on stderr and, where a window can show (started from the desktop menu), in a dialog:
    // never a silent exit.
    std::fprintf(stderr, "nanscope: %s (see nanscope --help)\n", qPrintable(o.usage_error));
    const QString platform = QGuiApplication::platformName();
    if (platform != "offscreen" && platform != "minimal")
      QMessageBox::critical(nullptr, "nanscope",
                            "nanscope cannot start: " + o.usage_error + "\n\nSee nanscope --help.");
    return 2;
  }
  QApplication::setOrganizationName("nanscope");  // QSettings: window layout, recent files
  QApplication::setApplicationName("nanscope");
  QApplication::setApplicationVersion(nanscope::kVersion);
  // A screenshot is the default layout, whatever the user arranged, and leaves the user's layout
  // and recent files alone: its window settings live in a directory of their own for the run.
  std::optional<QTemporaryDir> screenshot_settings;
  const bool scripted = !o.screenshot.isEmpty() || o.select.has_value();
  if (scripted)
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope,
                       screenshot_settings.emplace().path());
  MainWindow w(o.settings, o.open_file);
  w.resize(1500, 950);
  w.show();
  if (scripted)
    screenshot_when_ready(w, o);
  else if (!o.state_json.isEmpty())
    QObject::connect(&app, &QApplication::aboutToQuit, &w,
                     [&w, &o] { w.writeViewState(o.state_json); });
  return app.exec();
}
