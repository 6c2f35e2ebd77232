// The buffer inspector shows the buffer of the cell the user selected, or says that none is kept
// and offers the cells whose buffers are (the newest step, the slot's first-fire dump): every cell
// of a 3-fold run file walked; Ctrl+E after a long live run (the entry's dump, not the last step);
// a live selection the run has moved past; a file opened after a dump (nothing of the dump stays);
// a dump opened by hand (the table and the grids select its cell); and the offline view names the
// file's scenario and backend.
#include <QComboBox>
#include <QMenu>
#include <QTableView>
#include <QTableWidget>

#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"

using namespace nanscope::gui_test;

namespace {

struct Shown {
  QString source;
  int fold, step, slot;
  QString reason;
};

Shown shown(MainWindow& w) {
  const QJsonObject i = w.viewState()["inspector"].toObject();
  return {i["source"].toString(), i["fold"].toInt(), i["step"].toInt(), i["slot"].toInt(),
          i["reason"].toString()};
}

// Waits until the inspector shows something of `slot` at (fold, step), or says it has none (a
// recomputation from a checkpoint finished).
bool settles_on(MainWindow& w, int fold, int step, int slot) {
  return QTest::qWaitFor(
      [&] {
        const Shown s = shown(w);
        return s.slot == slot && s.fold == fold && s.step == step && !s.source.isEmpty() &&
               s.source != "recomputing";
      },
      5000);
}

}  // namespace

class InspectorTest : public QObject, GuiFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { setUpCase(); }

  // grad_norm's elements are named by what they are the norm of: the global one, then each
  // parameter group's.
  void gradNormsAreLabelledByGroup() {
    InspectorWidget inspector;
    std::vector<float> norms(1 + kGroupCount, 0.5f);
    BufferStats s = compute_stats(kGradNorm, {static_cast<std::int64_t>(norms.size())},
                                  norms.data(), norms.size(), "test");
    s.computed = true;
    s.exists = true;
    inspector.setStats(std::make_shared<const BufferStats>(std::move(s)));
    auto* values = inspector.findChild<QTableWidget*>("inspectorValues");
    QVERIFY(values);
    QCOMPARE(values->item(0, 0)->text(), QString("0 (global)"));
    QCOMPARE(values->item(1, 0)->text(), QString("1 (encoder)"));
    QCOMPARE(values->item(kGroupCount, 0)->text(), QString("%1 (aux)").arg(kGroupCount));
  }

  void everyCellOfARunFileShowsItsOwnBufferOrSaysItHasNone() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    waitOffline(w, three_fold_run_);
    const SnapshotPtr snap = w.snapshot();
    int dumps = 0, none = 0;
    for (int fold = 0; fold < 3; ++fold)
      for (int step = 0; step < 12; ++step)
        for (int slot = 0; slot < kBuiltinSlotCount; ++slot) {
          w.UI_selectCell(slot, fold, step);
          QVERIFY2(settles_on(w, fold, step, slot),
                   qPrintable(QString("fold %1 step %2 slot %3").arg(fold).arg(step).arg(slot)));
          const Shown s = shown(w);
          const bool first_fire =
              snap->folds[static_cast<std::size_t>(fold)].slots[slot].first_step == step;
          if (first_fire) {
            QCOMPARE(s.source, QString("dump"));
            ++dumps;
          } else {
            QCOMPARE(s.source, QString("none"));
            QVERIFY(s.reason.contains(
                QString("no buffer of fold %1, step %2 is kept").arg(fold).arg(step)));
            ++none;
          }
        }
    QVERIFY(dumps >= 3);  // each fold's injected slot at least, with what it reached
    QCOMPARE(dumps + none, 3 * 12 * kBuiltinSlotCount);
  }

  void theCommandLineSelectsACellForTheStateFile() {
    for (const auto& [cell, source, slot] :
         {std::tuple{QString("1:3:aux_pred_nb"), QString("dump"), int(kAuxPredNb)},
          std::tuple{QString("1:2:17"), QString("none"), int(kAuxPredNb)}}) {
      const QString json = dir_.filePath("select.json");
      QProcess p;
      p.setProcessEnvironment([] {
        auto e = QProcessEnvironment::systemEnvironment();
        e.insert("QT_QPA_PLATFORM", "offscreen");
        return e;
      }());
      p.start(NANSCOPE_GUI_BINARY,
              {three_fold_run_, "--screenshot-select", cell, "--state-json", json});
      QVERIFY(p.waitForFinished(60000));
      QCOMPARE(p.exitCode(), 0);
      QFile f(json);
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QJsonObject i = QJsonDocument::fromJson(f.readAll()).object()["inspector"].toObject();
      QCOMPARE(i["source"].toString(), source);
      QCOMPARE(i["fold"].toInt(), 1);
      QCOMPARE(i["step"].toInt(), cell.split(':')[1].toInt());
      QCOMPARE(i["slot"].toInt(), slot);
    }
    QProcess bad;
    bad.start(NANSCOPE_GUI_BINARY, {three_fold_run_, "--screenshot-select", "1:3:no_such_slot"});
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY(bad.readAllStandardError().contains("slot 'no_such_slot' is not a slot of this run"));
  }

  void ctrlEAfterALongLiveRunShowsTheEntrysDump() {
    MainWindow w(settings("healthy", {"run.folds=1", "run.steps_per_fold=60"}));
    w.show();
    waitReady(w);
    w.UI_inject("slot:h_s2@0:30");
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->finished && !w.running(), 30000);
    w.UI_jumpToEntry();
    QVERIFY(settles_on(w, 0, 30, kHS2));
    const QJsonObject i = w.viewState()["inspector"].toObject();
    QCOMPARE(i["source"].toString(), QString("dump"));
    QCOMPARE(i["nan"].toInt(), 1);  // the injected element, as the check saw it
  }

  // Without checkpoints (time travel off), nothing can be recomputed.
  void aLiveSelectionTheRunHasPassedSaysSoAndOffersTheNewestStep() {
    MainWindow w(settings("healthy", {"history.checkpoint_every=0"}));
    w.show();
    waitReady(w);
    for (int i = 0; i < 6; ++i) w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 6);
    w.UI_selectCell(kHS2, 0, 5);  // the newest step: its live buffer
    QVERIFY(settles_on(w, 0, 5, kHS2));
    QCOMPARE(shown(w).source, QString("live"));
    w.UI_step();  // the run moves on: step 5's buffer is overwritten
    QTRY_COMPARE(shown(w).source, QString("none"));
    QCOMPARE(shown(w).step, 5);
    w.UI_selectCell(kHS2, 0, 1);  // an old clean step: none, and the choice of the newest
    QVERIFY(settles_on(w, 0, 1, kHS2));
    QCOMPARE(shown(w).source, QString("none"));
    QPushButton* live = w.inspector()->liveChoice();
    QVERIFY(live->isVisible());
    QVERIFY(!w.inspector()->dumpChoice()->isVisible());  // h_s2 never fired
    live->click();
    QVERIFY(settles_on(w, 0, 6, kHS2));
    QCOMPARE(shown(w).source, QString("live"));
    QCOMPARE(w.selectedStep(), 6);
  }

  void openingAFileAfterADumpLeavesNothingOfTheDump() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    waitOffline(w, three_fold_run_);
    const QString dump =
        QFileInfo(three_fold_run_).dir().filePath("dumps/fold001_step00000003_aux_pred_nb.h5");
    w.UI_selectCell(kHS1, 0, 2);
    w.UI_openFile(dump);  // by hand: the selection follows the dump's cell
    QVERIFY(settles_on(w, 1, 3, kAuxPredNb));
    QCOMPARE(w.selectedSlot(), int(kAuxPredNb));
    QCOMPARE(w.selectedFold(), 1);
    QCOMPARE(w.selectedStep(), 3);
    QCOMPARE(w.stepPlot()->selection(), std::make_pair(int(kAuxPredNb), 3));
    const QString other = makeThreeFoldRun("other");
    w.UI_openFile(other);
    waitOffline(w, other);
    QTRY_VERIFY(w.viewState()["inspector"].isNull());
    QCOMPARE(w.selectedSlot(), -1);
    // File > Recent follows what was opened in this session, newest first.
    QMenu* recent = nullptr;
    for (QMenu* m : w.findChildren<QMenu*>())
      if (m->title() == "Recent") recent = m;
    QVERIFY(recent && recent->isEnabled() && !recent->actions().isEmpty());
    QCOMPARE(recent->actions().front()->text(), QFileInfo(other).absoluteFilePath());
  }

  void theShownBufferSavesAsNpyAndCsvBitForBit() {
    // A dumped buffer with a NaN in it (aux_pred_nb, fold 1, step 3) saved from the inspector:
    // numpy.load gives the dump's dataset bit for bit (h5py reads it), the CSV the same values.
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    waitOffline(w, three_fold_run_);
    w.UI_selectCell(kAuxPredNb, 1, 3);
    QVERIFY(settles_on(w, 1, 3, kAuxPredNb));
    QCOMPARE(shown(w).source, QString("dump"));
    QVERIFY(w.inspector()->findChild<QPushButton*>("saveNpy")->isVisible());
    const QString npy = dir_.filePath("aux.npy"), csv = dir_.filePath("aux.csv");
    QCOMPARE(w.inspector()->saveNpy(npy), QString());
    QCOMPARE(w.inspector()->saveCsv(csv), QString());
    const QString dump =
        QFileInfo(three_fold_run_).dir().filePath("dumps/fold001_step00000003_aux_pred_nb.h5");
    QProcess py;
    py.start("/usr/bin/python3",
             {"-c",
              "import sys, h5py, numpy as np\n"
              "a = np.load(sys.argv[1])\n"
              "b = h5py.File(sys.argv[2], 'r')['slots/aux_pred_nb'][()]\n"
              "assert a.dtype == np.float32 and a.shape == b.shape, (a.dtype, a.shape, b.shape)\n"
              "assert (a.view(np.uint32) == b.view(np.uint32)).all(), 'bits differ'\n"
              "assert np.isnan(a).sum() == 1\n"
              "c = np.genfromtxt(sys.argv[3], delimiter=',', skip_header=1)\n"
              "assert (c[:, 0] == np.arange(a.size)).all()\n"
              "v = c[:, 1].astype(np.float32)\n"
              "same = (v.view(np.uint32) == a.ravel().view(np.uint32)) | (np.isnan(v) & "
              "np.isnan(a.ravel()))\n"
              "assert same.all(), 'csv values differ'\n"
              "print('ok', a.shape)\n",
              npy, dump, csv});
    QVERIFY(py.waitForFinished(60000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    QVERIFY(py.readAllStandardOutput().startsWith("ok"));
    // A file that cannot be written is refused with its name and the reason.
    const QString nowhere = dir_.filePath("no/such/dir/aux.npy");
    QVERIFY(w.inspector()->saveNpy(nowhere).startsWith(nowhere));
  }

  void theOfflineViewNamesTheFilesScenarioAndBackend() {
    // Written by the CLI with a scenario: the window, started on the healthy preset, names the
    // file's (combo box, status bar, state file), and its own again once back live.
    const QString out = dir_.filePath("lrx");
    QProcess cli;
    cli.start(QFileInfo(NANSCOPE_GUI_BINARY).dir().filePath("../cli/nanscope-run"),
              {"--backend", "cpu", "--scenario", "lr-explosion", "--folds", "1", "--steps-per-fold",
               "3", "--out", out, "--quiet"});
    QVERIFY(cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 1);  // it fired
    MainWindow w(settings("healthy"), out + "/run.h5");
    w.show();
    waitOffline(w, out + "/run.h5");
    QCOMPARE(w.viewState()["scenario"].toString(), QString("lr-explosion"));
    QVERIFY2(
        w.viewState()["status"].toString().contains("(scenario lr-explosion; 1 fold, 3 steps)"),
        qPrintable(w.viewState()["status"].toString()));
    QCOMPARE(w.viewState()["backend"].toString(), QString("cpu"));
    QVERIFY(w.viewState()["status_backend"].toString().startsWith("cpu ["));
    auto* box = w.findChild<QComboBox*>("scenarioBox");
    QVERIFY(box);
    QCOMPARE(box->currentText(), QString("lr-explosion"));
    QVERIFY(!box->isEnabled());
    // A file has no run to break or check: the table's boxes are disabled, not silently inert.
    const QAbstractItemModel* table = w.slotTable();
    for (int column : {SlotTableModel::BreakOn, SlotTableModel::Check})
      QVERIFY(!(table->flags(table->index(0, column)) & Qt::ItemIsEnabled));
    w.UI_goLive();
    QTRY_VERIFY(!w.offline() && w.hasLiveSession());
    QTRY_COMPARE(box->currentText(), QString("healthy"));
    QTRY_VERIFY(table->flags(table->index(0, SlotTableModel::BreakOn)) & Qt::ItemIsUserCheckable);
  }
};

NANSCOPE_GUI_TEST("inspector", InspectorTest);
#include "inspector_test.moc"
