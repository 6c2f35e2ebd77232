// nanscope: the Qt workbench. Live mode drives the trainer on an engine thread; `nanscope
// PATH/run.h5` opens a finished (or running) run's files offline, with no live session.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>
#include <QTemporaryDir>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "app/screenshot.h"
#include "backend_choice.h"
#include "core/slot_table.h"
#include "core/version.h"
#include "io/file_guard.h"
#include "widgets/main_window.h"
#include "widgets/window_placement.h"

using namespace nanscope::gui;

namespace {

struct Options : ScreenshotOptions {
  EngineSettings settings;
  QString open_file;
  QString usage_error;  // a command line that could not be read: said, exit 2
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
      "health series in the metrics), filter=TEXT (the slot name filter), sweep-sorted (a sweep's "
      "tasks by first fire) (comma-separated)",
      "what");
  QCommandLineOption simulate("screenshot-simulate",
                              "save the screenshot as seen with deuteranopia or protanopia",
                              "vision");
  QCommandLineOption select(
      "screenshot-select",
      "before the screenshot and the state JSON: select the cell FOLD:STEP:SLOT (slot by name or "
      "index) as a click would; the inspector shows its buffer or says why there is none",
      "cell");
  QCommandLineOption shot_size("screenshot-size",
                               "the window's size for the screenshot (default 1500x950)", "WxH",
                               "1500x950");
  for (auto* o : {&scenario, &set, &config, &folds, &steps, &seed, &inject, &backend, &out, &shot,
                  &after, &state, &view, &simulate, &select, &shot_size})
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
  const auto chosen = nanscope::parse_enum<nanscope::BackendChoice>(p.value(backend).toStdString());
  if (!chosen) {
    o.usage_error = QString("--backend %1: expected auto, cuda or cpu").arg(p.value(backend));
    return o;
  }
  if (*chosen == nanscope::BackendChoice::Cpu) {
    o.settings.cpu_only = true;
  } else if (*chosen == nanscope::BackendChoice::Cuda) {
    o.settings.make_backend = [](const nanscope::Config& c) {
      return nanscope::choose_backend(nanscope::BackendChoice::Cuda, c, false);
    };
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
  if (const QString bad = screenshot_view_error(o.view); !bad.isEmpty()) {
    std::fprintf(stderr, "nanscope: --screenshot-view: %s\n", qPrintable(bad));
    std::exit(2);
  }
  o.simulate = p.value(simulate);
  {
    const QStringList wh = p.value(shot_size).split('x');
    bool w_ok = false, h_ok = false;
    const int width = wh.size() == 2 ? wh[0].toInt(&w_ok) : 0;
    const int height = wh.size() == 2 ? wh[1].toInt(&h_ok) : 0;
    if (!w_ok || !h_ok || width < 320 || height < 240 || width > 8192 || height > 8192) {
      std::fprintf(stderr,
                   "nanscope: --screenshot-size %s: expected WIDTHxHEIGHT in pixels (320x240 to "
                   "8192x8192)\n",
                   qPrintable(p.value(shot_size)));
      std::exit(2);
    }
    o.size = QSize(width, height);
  }
  if (p.isSet(select)) {
    const QStringList f = p.value(select).split(':');
    bool fold_ok = false, step_ok = false;
    const int fold = f.size() == 3 ? f[0].toInt(&fold_ok) : -1;
    const int step = f.size() == 3 ? f[1].toInt(&step_ok) : -1;
    if (!fold_ok || !step_ok || fold < 0 || step < 0 || f.size() != 3 || f[2].isEmpty()) {
      std::fprintf(stderr,
                   "nanscope: --screenshot-select %s: expected FOLD:STEP:SLOT (numbers from 0, a "
                   "slot name or index)\n",
                   qPrintable(p.value(select)));
      std::exit(2);
    }
    o.select = ScreenshotOptions::Cell{fold, step, f[2]};
  }
  return o;
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
  // The size the user left (restored by the window), or the default; a screenshot's is the
  // default. Either within the screen the window opens on.
  if (scripted || !QSettings().contains("window/geometry")) w.resize(o.size);
  if (!scripted) keep_within_screen(w);
  w.show();
  if (scripted)
    screenshot_when_ready(w, o);
  else if (!o.state_json.isEmpty())
    QObject::connect(&app, &QApplication::aboutToQuit, &w,
                     [&w, &o] { w.writeViewState(o.state_json); });
  return app.exec();
}
