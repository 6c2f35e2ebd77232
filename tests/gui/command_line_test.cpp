// nanscope takes nanscope-run's run flags with the same meaning (--folds, --steps-per-fold, --seed,
// --inject, --backend): the window's run is the one they describe (its state file read back); a bad
// value is the config's error (exit 78 in screenshot mode, as nanscope-run), an unknown flag or
// backend is said and exits 2, never silently.
#include "gui/gui_fixture.h"

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

QTEST_MAIN(CommandLineTest)
#include "command_line_test.moc"
