// Time travel in the real window (offscreen): any cell of the slot x step grid opens its own
// buffer, recomputed from the latest checkpoint at or before it, equal bit for bit to that slot's
// buffer in a fresh run halted after that step; Shift+F10 steps back; the go-to-step box reaches
// any step; a run file with checkpoints travels offline; a request superseded by a newer one is
// dropped.
#include <QJsonObject>
#include <QtTest>

#include <cstring>

#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"
#include "session/scenarios.h"
#include "session/step_compare.h"

using namespace nanscope;
using namespace nanscope::gui;
using namespace nanscope::gui_test;

namespace {

QJsonObject inspector(MainWindow& w) {
  return w.viewState()["inspector"].toObject();
}

// Waits until the inspector shows (fold, step, slot) recomputed.
bool recomputed(MainWindow& w, int fold, int step, int slot) {
  return QTest::qWaitFor(
      [&] {
        const QJsonObject i = inspector(w);
        return i["source"].toString() == "recomputed" && i["fold"].toInt() == fold &&
               i["step"].toInt() == step && i["slot"].toInt() == slot;
      },
      20000);
}

Config config_of(const QStringList& sets) {
  std::vector<std::string> s;
  for (const QString& kv : sets) s.push_back(kv.toStdString());
  return resolve_config("healthy", "", s);
}

// The slot's buffer in a fresh run of `c` halted after (fold, step).
std::vector<float> fresh_buffer(const Config& c, int fold, int step, int slot) {
  Session s(c, make_cpu_backend(c));
  s.run(RunUntil{RunUntil::Kind::Steps,
                 static_cast<std::int64_t>(fold) * c.run.steps_per_fold + step + 1, -1});
  const SlotView v = s.backend().slot(slot);
  std::vector<float> out(v.count);
  for (std::size_t i = 0; i < v.count; ++i) out[i] = static_cast<float>(v.at(i));
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Shows the live window and runs its first fold (20 steps) to its end.
bool ranTheFirstFold(MainWindow& w) {
  w.show();
  if (!QTest::qWaitFor([&] { return w.snapshot() && w.hasLiveSession(); }, 10000)) return false;
  w.UI_run(EngineController::UntilFoldEnd);
  return QTest::qWaitFor([&] { return w.snapshot()->global_step == 20 && !w.running(); }, 30000);
}

}  // namespace

class TimeTravelTest : public QObject, public GuiFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { setUpCase(); }

  void anyCellOfALiveRunOpensItsOwnBuffer() {
    const QStringList extra = {"history.checkpoint_every=8", "halt.on_fire=never"};
    MainWindow w(settings("healthy", extra));
    w.show();
    waitReady(w);
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->finished && !w.running(), 30000);
    const Config c = config_of(kSmall + extra);

    w.UI_selectCell(kHS2, 0, 11);  // a clean step the run has long passed
    QVERIFY(recomputed(w, 0, 11, kHS2));
    QJsonObject i = inspector(w);
    QCOMPARE(i["checkpoint_step"].toInt(), 8);
    QCOMPARE(i["steps_run"].toInt(), 4);
    QCOMPARE(i["other_backend"].toBool(), false);
    QVERIFY(i["header"].toString().contains(
        "recomputed from the checkpoint at step 8 (4 steps re-run, this one included"));
    QVERIFY(same_bits(w.inspector()->stats()->values, fresh_buffer(c, 0, 11, kHS2)));
    QCOMPARE(i["finite"].toInt(), static_cast<int>(w.inspector()->stats()->values.size()));

    // Shift+F10: the step before, its own buffer, one step from the state the recomputation of
    // step 11 passed through (not a re-run from the checkpoint); and again.
    w.activateWindow();
    for (int step : {10, 9}) {
      QTest::keyClick(&w, Qt::Key_F10, Qt::ShiftModifier);
      QTRY_COMPARE(w.selectedStep(), step);
      QVERIFY(recomputed(w, 0, step, kHS2));
      QCOMPARE(inspector(w)["steps_run"].toInt(), 1);
      QCOMPARE(inspector(w)["checkpoint_step"].toInt(), step);
      QVERIFY(inspector(w)["header"].toString().contains("state kept by an earlier recomputation"));
      QVERIFY(same_bits(w.inspector()->stats()->values, fresh_buffer(c, 0, step, kHS2)));
    }
    // The cell after it again: the state after step 9 was kept too.
    w.UI_selectCell(kHS2, 0, 10);
    QVERIFY(recomputed(w, 0, 10, kHS2));
    QCOMPARE(inspector(w)["steps_run"].toInt(), 1);
    QVERIFY(same_bits(w.inspector()->stats()->values, fresh_buffer(c, 0, 10, kHS2)));

    // The go-to-step box reaches any step of any fold; another slot of the same cell too.
    QVERIFY(w.UI_goTo("1:0"));
    QVERIFY(recomputed(w, 1, 0, kHS2));
    QCOMPARE(inspector(w)["steps_run"].toInt(), 1);
    QVERIFY(same_bits(w.inspector()->stats()->values, fresh_buffer(c, 1, 0, kHS2)));
    w.UI_selectCell(kAdamMoments, 1, 17);
    QVERIFY(recomputed(w, 1, 17, kAdamMoments));
    QVERIFY(same_bits(w.inspector()->stats()->values, fresh_buffer(c, 1, 17, kAdamMoments)));
  }

  // Live, a cell clicked in the step grid keeps its fold while the run goes on into the next one:
  // the selection, the step grid and the inspector all stay on the clicked cell (the inspector
  // never shows one fold's buffer beside another fold's selected cell).
  void aClickedCellStaysSelectedWhenTheRunCrossesIntoTheNextFold() {
    const QStringList extra = {"history.checkpoint_every=8", "halt.on_fire=never"};
    MainWindow w(settings("healthy", extra));
    QVERIFY(ranTheFirstFold(w));
    w.stepPlot()->replot();
    QTest::mouseClick(w.stepPlot(), Qt::LeftButton, Qt::NoModifier,
                      cell_pixel(w.stepPlot(), 9, kHS2));
    QTRY_COMPARE(w.selectedStep(), 9);
    QVERIFY(recomputed(w, 0, 9, kHS2));
    w.UI_run(EngineController::UntilEnd);  // on through fold 1
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->finished && !w.running(), 30000);
    QTest::qWait(300);
    const QJsonObject sel = w.viewState()["selection"].toObject();
    QCOMPARE(sel["fold"].toInt(), 0);
    QCOMPARE(sel["step"].toInt(), 9);
    QCOMPARE(w.stepGrid()->fold(), 0);
    const QJsonObject i = inspector(w);
    QCOMPARE(i["fold"].toInt(), 0);
    QCOMPARE(i["step"].toInt(), 9);
    QCOMPARE(i["slot"].toInt(), int(kHS2));
    const Config c = config_of(kSmall + extra);
    QVERIFY(same_bits(w.inspector()->stats()->values, fresh_buffer(c, 0, 9, kHS2)));
  }

  // Step compare, element by element: the selected slot's buffers at steps A and B, recomputed,
  // against the same comparison of a fresh run's buffers.
  void stepCompareComparesAnyTwoStepsBuffers() {
    const QStringList extra = {"history.checkpoint_every=8", "halt.on_fire=never"};
    MainWindow w(settings("healthy", extra));
    QVERIFY(ranTheFirstFold(w));
    w.UI_selectCell(kBnZ, 0, 3);
    w.UI_compareSteps(3, 17);
    w.findChild<QPushButton*>("compareBuffers")->click();
    QTRY_VERIFY_WITH_TIMEOUT(
        w.viewState()["compare"].toObject()["buffers"].toObject()["ok"].toBool(), 20000);
    const QJsonObject b = w.viewState()["compare"].toObject()["buffers"].toObject();
    const Config c = config_of(kSmall + extra);
    const ElementwiseChange want =
        compare_elementwise(fresh_buffer(c, 0, 3, kBnZ), fresh_buffer(c, 0, 17, kBnZ));
    QCOMPARE(b["step_a"].toInt(), 3);
    QCOMPARE(b["step_b"].toInt(), 17);
    QCOMPARE(b["differing"].toInteger(), want.differing);
    QVERIFY(want.differing > 0);
    QCOMPARE(b["first_index"].toInteger(), want.first_index);
    QCOMPARE(b["max_abs"].toDouble(), want.max_abs);
    QCOMPARE(b["max_abs_index"].toInteger(), want.max_abs_index);
    QCOMPARE(b["max_rel_index"].toInteger(), want.max_rel_index);
    QVERIFY(w.findChild<QLabel*>("bufferCompare")->text().contains("largest change"));
  }

  void aRunFileWithCheckpointsTravelsOffline() {
    ConfigBuilder b;
    for (const auto& s : kSmall) b.set(s.toStdString());
    b.set("history.checkpoint_every=5");
    b.set("history.in_run_file=true");
    b.set("halt.on_fire=never");
    const Config c = b.build();
    const QString file = recordRun("offline_travel", c, {"slot:h_s1@1:7"});
    MainWindow w(settings("healthy"), file);
    w.show();
    waitOffline(w, file);
    w.UI_selectCell(kBnZ, 1, 9);  // two steps after the injection's fire
    QVERIFY(recomputed(w, 1, 9, kBnZ));
    const QJsonObject i = inspector(w);
    QCOMPARE(i["checkpoint_step"].toInt(), 5);
    QCOMPARE(i["steps_run"].toInt(), 5);
    Config injected = c;
    injected.inject.faults = {"slot:h_s1@1:7"};
    QVERIFY(same_bits(w.inspector()->stats()->values, fresh_buffer(injected, 1, 9, kBnZ)));
  }

  // The default model and fold (one fold of 400 steps, checkpoints every 100, in the run file):
  // a click 150 steps before the fold's end shows that step's buffer, the run's own buffer there.
  void theDefaultRunsStep249OpensOffline() {
    Config c;
    c.run.folds = 1;
    c.history.in_run_file = true;
    SessionOptions o;
    o.out_dir = dir_.filePath("default").toStdString();
    Session run(c, make_cpu_backend(c), o);
    run.run(RunUntil{RunUntil::Kind::Steps, 250, -1});  // halted after step 249
    std::vector<float> want(run.backend().slot(kHS2).count);
    for (std::size_t i = 0; i < want.size(); ++i)
      want[i] = static_cast<float>(run.backend().slot(kHS2).at(i));
    run.run();  // on to the fold's end
    const QString file = QString::fromStdString(run.run_file_path());
    MainWindow w(settings("healthy"), file);
    w.show();
    waitOffline(w, file);
    w.stepPlot()->xAxis->setRange(224.5, 274.5);  // 50 columns: a few pixels each
    w.stepPlot()->replot();
    const QPoint cell = cell_pixel(w.stepPlot(), 249, kHS2);
    QTest::mouseClick(w.stepPlot(), Qt::LeftButton, Qt::NoModifier, cell);
    QTRY_COMPARE(w.selectedStep(), 249);
    QCOMPARE(w.selectedSlot(), int(kHS2));
    QVERIFY(recomputed(w, 0, 249, kHS2));
    const QJsonObject i = inspector(w);
    QCOMPARE(i["checkpoint_step"].toInt(), 200);
    QCOMPARE(i["steps_run"].toInt(), 50);
    QCOMPARE(i["count"].toInt(), 256 * 256);
    QVERIFY(same_bits(w.inspector()->stats()->values, want));
  }

  void aRequestSupersededByANewerOneIsDropped() {
    ConfigBuilder b;
    for (const auto& s : kSmall) b.set(s.toStdString());
    b.set("history.checkpoint_every=20");  // every recomputation runs from the fold's start
    b.set("history.in_run_file=true");
    const QString file = recordRun("superseded", b.build());
    MainWindow w(settings("healthy"), file);
    w.show();
    waitOffline(w, file);
    w.UI_selectCell(kHS1, 0, 19);
    w.UI_selectCell(kHS1, 1, 18);
    w.UI_selectCell(kHS2, 0, 3);  // the one asked for last is the one shown
    QVERIFY(recomputed(w, 0, 3, kHS2));
    QTest::qWait(500);  // nothing of the earlier requests arrives later
    const QJsonObject i = inspector(w);
    QCOMPARE(i["step"].toInt(), 3);
    QCOMPARE(i["slot"].toInt(), int(kHS2));
  }
};

NANSCOPE_GUI_TEST("time_travel", TimeTravelTest);
#include "time_travel_test.moc"
