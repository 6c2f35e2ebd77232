// nanscope takes nanscope-run's run flags with the same meaning (--folds, --steps-per-fold, --seed,
// --inject, --backend): the window's run is the one they describe (its state file read back); a bad
// value is the config's error (exit 78 in screenshot mode, as nanscope-run), an unknown flag or
// backend is said and exits 2, never silently.
#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"

using namespace nanscope::gui_test;

namespace {

struct Ran {
  int code;
  QJsonObject state;
  QByteArray err;
};

Ran run_gui(const QStringList& args, const QString& json) {
  QProcess p;
  auto env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  p.setProcessEnvironment(env);
  p.start(NANSCOPE_GUI_BINARY, args + QStringList{"--state-json", json});
  if (!p.waitForFinished(120000)) return {-1, {}, {}};
  QFile f(json);
  QJsonObject state;
  if (f.open(QIODevice::ReadOnly)) state = QJsonDocument::fromJson(f.readAll()).object();
  return {p.exitCode(), state, p.readAllStandardError()};
}

}  // namespace

class CommandLineTest : public QObject, GuiFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { setUpCase(); }

  void theRunFlagsDescribeTheWindowsRun() {
    QStringList args = {"--folds",
                        "1",
                        "--steps-per-fold",
                        "4",
                        "--seed",
                        "7",
                        "--backend",
                        "cpu",
                        "--inject",
                        "slot:h_s1@0:1",
                        "--out-root",
                        dir_.filePath("runs"),
                        "--screenshot",
                        dir_.filePath("flags.png"),
                        "--screenshot-after",
                        "steps:4"};
    for (const QString& s : kSmall)
      if (!s.startsWith("run.")) args << "--set" << s;
    const Ran r = run_gui(args, dir_.filePath("flags.json"));
    QCOMPARE(r.code, 0);
    QCOMPARE(r.state["global_step"].toInt(), 4);
    QCOMPARE(r.state["folds"].toArray().size(), 1);
    QCOMPARE(r.state["injections"].toArray(), QJsonArray({"slot:h_s1@0:1"}));
    QVERIFY(r.state["status_backend"].toString().startsWith("cpu ["));
    const QJsonArray slots = r.state["folds"].toArray()[0].toObject()["slots"].toArray();
    QCOMPARE(slots[kHS1].toObject()["state"].toString(), QString("fired"));
    QCOMPARE(slots[kBatch].toObject()["state"].toString(), QString("clean"));
  }

  void badFlagsAreSaidWithTheCodesOfNanscopeRun() {
    const Ran folds = run_gui({"--folds", "x", "--screenshot", dir_.filePath("bad.png")},
                              dir_.filePath("bad.json"));
    QCOMPARE(folds.code, 78);  // the config's error, as nanscope-run --folds x
    QVERIFY2(folds.state["status"].toString().contains("no run"),
             qPrintable(folds.state["status"].toString()));
    // --backend cuda where CUDA cannot be used (no plugin, no driver, no device): a device error,
    // exit 69 as nanscope-run's; where it can, the run is on CUDA.
    const Ran cuda = run_gui({"--backend", "cuda", "--folds", "1", "--steps-per-fold", "2",
                              "--out-root", dir_.filePath("runs"), "--screenshot",
                              dir_.filePath("cuda.png"), "--screenshot-after", "steps:2"},
                             dir_.filePath("cuda.json"));
    if (cuda.code == 0) {
      QVERIFY(cuda.state["status_backend"].toString().startsWith("cuda ["));
    } else {
      QCOMPARE(cuda.code, 69);
      QVERIFY2(cuda.state["status"].toString().startsWith("device error: "),
               qPrintable(cuda.state["status"].toString()));
    }
    const Ran unknown = run_gui({"--bogus"}, dir_.filePath("unknown.json"));
    QCOMPARE(unknown.code, 2);
    QVERIFY(unknown.err.contains("Unknown option 'bogus'"));
    const Ran backend = run_gui({"--backend", "gpu"}, dir_.filePath("backend.json"));
    QCOMPARE(backend.code, 2);
    QVERIFY(backend.err.contains("--backend gpu: expected auto, cuda or cpu"));
  }

  // Screenshot mode refuses what it cannot do, with the codes of nanscope-run, and never hangs: a
  // broken view file (78, its message in the state file), a cell the run does not have (2) and a
  // --screenshot-view item it does not know (2).
  void screenshotModeRefusesBadViewsCellsAndItems() {
    const QString bad = dir_.filePath("broken.nsview");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"nanscope_view": 9})");
    f.close();
    const Ran view =
        run_gui({bad, "--screenshot", dir_.filePath("v.png"), "--screenshot-after", "steps:0"},
                dir_.filePath("v.json"));
    QCOMPARE(view.code, 78);
    QVERIFY2(view.state["status"].toString().contains("key nanscope_view: expected 1"),
             qPrintable(view.state["status"].toString()));
    QVERIFY(QFile::exists(dir_.filePath("v.png")));
    const Ran cell =
        run_gui({three_fold_run_, "--screenshot-select", "9:0:h_s2"}, dir_.filePath("c.json"));
    QCOMPARE(cell.code, 2);
    QVERIFY2(cell.err.contains("--screenshot-select 9:0: fold 9 is not in the run (folds 0-2)"),
             cell.err.constData());
    const Ran step =
        run_gui({three_fold_run_, "--screenshot-select", "1:99:h_s2"}, dir_.filePath("s.json"));
    QCOMPARE(step.code, 2);
    QVERIFY2(step.err.contains("fold 1 has steps 0-11"), step.err.constData());
    const Ran slot =
        run_gui({three_fold_run_, "--screenshot-select", "1:0:no_such"}, dir_.filePath("n.json"));
    QCOMPARE(slot.code, 2);
    QVERIFY2(slot.err.contains(
                 QString("slot 'no_such' is not a slot of this run (a name, or an index 0-%1)")
                     .arg(nanscope::kBuiltinSlotCount - 1)
                     .toUtf8()),
             slot.err.constData());
    for (const auto& [item, why] : {std::pair{"health=h_s9:absmax", "no slot named 'h_s9'"},
                                    {"health=h_s2:bogus", "no measure 'bogus'"},
                                    {"bogusview", "unknown item 'bogusview'"}}) {
      const Ran r = run_gui(
          {three_fold_run_, "--screenshot", dir_.filePath("i.png"), "--screenshot-view", item},
          dir_.filePath("i.json"));
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains(why), r.err.constData());
    }
    // Items with spaces after the commas are the same items.
    const Ran spaced = run_gui({three_fold_run_, "--screenshot", dir_.filePath("ok.png"),
                                "--screenshot-view", "health=h_s2:absmax, log"},
                               dir_.filePath("ok.json"));
    QCOMPARE(spaced.code, 0);
    QCOMPARE(spaced.state["metrics"].toObject()["log_scale"].toBool(), true);
  }

  void withNoRunTheEmptyPlotsSaySoInsteadOfOfferingKeys() {
    EngineSettings s = settings("healthy");
    s.make_backend = [](const Config&) -> std::unique_ptr<Backend> {
      throw DeviceError("no usable CUDA device: no NVIDIA driver (test)");
    };
    MainWindow w(s);
    w.show();
    QTRY_VERIFY(w.statusText().startsWith("device error: "));
    QVERIFY(w.stepPlot()->showsEmptyState());
    QCOMPARE(w.stepPlot()->emptyHint(), QString("no run\n(the status bar says why)"));
    QCOMPARE(w.metrics()->emptyHint(), QString("no run (the status bar says why)"));
    MainWindow live(settings("healthy"));
    live.show();
    waitReady(live);
    QVERIFY(live.stepPlot()->emptyHint().contains("F10: one step"));
  }
};

NANSCOPE_GUI_TEST("command_line", CommandLineTest);
#include "command_line_test.moc"
