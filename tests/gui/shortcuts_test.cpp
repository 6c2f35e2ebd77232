// Every shortcut of docs/gui.md's table pressed on the real window (QTest::keyClick), offscreen,
// and its effect read back from what the window shows. F8, Shift+F8, Ctrl+1, Ctrl+2 and Ctrl+D are
// pressed by the navigation and health views tests.
#include <QFileDialog>
#include <QMenuBar>
#include <QTableWidget>
#include <QTimer>

#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"

using namespace nanscope::gui_test;

namespace {

// Presses `key` on the window and answers the modal dialog it opens with `answer`, which gets the
// dialog (QFileDialog::getOpenFileName runs its own event loop until the dialog closes).
template <class Answer>
void press_into_modal(MainWindow& w, int key, Qt::KeyboardModifiers mods, Answer answer) {
  QTimer::singleShot(200, [answer] {
    QWidget* modal = QApplication::activeModalWidget();
    answer(modal);
  });
  QTest::keyClick(&w, static_cast<Qt::Key>(key), mods);
}

// Shortcuts of the window's context go to the active window: shown and activated first.
void show_active(MainWindow& w) {
  w.show();
  w.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&w));
}

QMessageBox* visible_box(MainWindow& w, const char* name) {
  for (auto* b : w.findChildren<QMessageBox*>(name))
    if (b->isVisible()) return b;
  return nullptr;
}

}  // namespace

class ShortcutsTest : public QObject, GuiFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { setUpCase(); }

  void theRunMenusKeysStepRunAndStop() {
    MainWindow w(settings("healthy"));
    show_active(w);
    waitReady(w);
    QCOMPARE(w.snapshot()->global_step, 0);
    QTest::keyClick(&w, Qt::Key_F11);  // Step phase
    QTRY_VERIFY(w.snapshot()->mid_step);
    QCOMPARE(w.snapshot()->global_step, 0);
    QTest::keyClick(&w, Qt::Key_F10);  // Step: the rest of it
    QTRY_COMPARE(w.snapshot()->global_step, 1);
    QVERIFY(!w.snapshot()->mid_step);
    QTest::keyClick(&w, Qt::Key_F10, Qt::ControlModifier);  // Run to fold end
    QTRY_COMPARE_WITH_TIMEOUT(w.snapshot()->global_step, 20, 20000);
    QTRY_VERIFY(!w.running());
    QTest::keyClick(&w, Qt::Key_F5, Qt::ControlModifier);  // Run: to the end
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->finished, 20000);
    QCOMPARE(w.snapshot()->global_step, 40);
    QTest::keyClick(&w, Qt::Key_F5, Qt::ShiftModifier);  // Stop: asks first, the run has steps
    QMessageBox* box = visible_box(w, "restartBox");
    QVERIFY(box);
    for (auto* b : box->buttons())
      if (b->text() == "Restart") b->click();
    QTRY_COMPARE(w.snapshot()->global_step, 0);
    QVERIFY(!w.snapshot()->finished);
  }

  void f5RunsUntilTheFirstFireAndF9SetsABreakpoint() {
    MainWindow w(settings("healthy"));
    show_active(w);
    waitReady(w);
    w.UI_inject("slot:h_s1@0:3");
    QTest::keyClick(&w, Qt::Key_F5);  // Run until fire
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->halt.has_value() && !w.running(), 20000);
    QCOMPARE(w.snapshot()->halt->kind, EventKind::HaltNan);
    QCOMPARE(w.snapshot()->halt->step, 3);
    QCOMPARE(w.snapshot()->global_step, 4);
    w.UI_selectSlot(kAuxLoss);
    QTest::keyClick(&w, Qt::Key_F9);  // Break on slot: the selected one
    QTRY_VERIFY(w.snapshot()->breakpoints.count(kAuxLoss) == 1);
    QTest::keyClick(&w, Qt::Key_F9);  // pressed again: the breakpoint goes
    QTRY_VERIFY(w.snapshot()->breakpoints.count(kAuxLoss) == 0);
  }

  void escapeAndPausePauseARun() {
    MainWindow w(settings("healthy", {"run.steps_per_fold=100000"}));
    show_active(w);
    waitReady(w);
    for (const auto key : {Qt::Key_Escape, Qt::Key_Pause}) {
      QTest::keyClick(&w, Qt::Key_F5, Qt::ControlModifier);
      QVERIFY(w.running());
      QTest::keyClick(&w, key);  // at once: before the engine thread has said it runs
      QTRY_VERIFY_WITH_TIMEOUT(!w.running(), 10000);
      QVERIFY(w.snapshot()->global_step < 100000);
      const auto paused_at = w.snapshot()->global_step;
      QTest::qWait(300);
      QCOMPARE(w.snapshot()->global_step, paused_at);  // stopped, not running on
      QVERIFY(!w.snapshot()->finished);
    }
  }

  // Another trainer's run file brings its own table: the slot table and the grids take its rows,
  // and give nanscope's back with nanscope's run. Its dump, opened over nanscope's run, is shown
  // in the inspector by its own slot's name and leaves the grids' selection alone.
  void anotherTrainersRunBringsItsRowsAndItsDumpItsNames() {
    const QString fixtures = QString(NANSCOPE_SOURCE_DIR) + "/tests/data/v0.1.0/";
    MainWindow w(settings("healthy"), three_fold_run_);
    show_active(w);
    waitOffline(w, three_fold_run_);
    QTRY_COMPARE(w.slotTable()->rowCount(), nanscope::kBuiltinSlotCount);
    w.UI_openFile(fixtures + "sdk_run.h5");
    waitOffline(w, fixtures + "sdk_run.h5");
    QTRY_COMPARE(w.slotTable()->rowCount(), 11);
    QTRY_COMPARE(w.stepGrid()->rowCount(), 11);
    QTRY_COMPARE(w.foldGrid()->rowCount(), 11);
    // Its metrics legend names what it has: its loss, not nanscope's c51 term.
    QStringList legend;
    for (int i = 0; i < w.metrics()->legend->itemCount(); ++i)
      if (auto* item = qobject_cast<QCPPlottableLegendItem*>(w.metrics()->legend->item(i)))
        legend << item->plottable()->name();
    QVERIFY2(!legend.contains("c51") && legend.contains("total loss"),
             qPrintable(legend.join(", ")));
    w.UI_openFile(three_fold_run_);
    waitOffline(w, three_fold_run_);
    QTRY_COMPARE(w.slotTable()->rowCount(), nanscope::kBuiltinSlotCount);
    QTRY_COMPARE(w.stepGrid()->rowCount(), nanscope::kBuiltinSlotCount);
    const int selected = w.selectedSlot();
    w.UI_openFile(fixtures + "sdk_dump.h5");
    QTRY_VERIFY2(w.inspector()->summaryText().contains("1 x_norm"),
                 qPrintable(w.inspector()->summaryText()));
    QCOMPARE(w.selectedSlot(), selected);
    w.UI_copyCell();  // the selection is the shown run's cell: nothing of the dump's table
  }

  void theFileViewAndHelpKeys() {
    MainWindow w(settings("healthy"));
    w.resize(1500, 950);
    show_active(w);
    waitReady(w);
    // Ctrl+O: the open dialog for run files and dumps (cancelled here).
    QString title;
    press_into_modal(w, Qt::Key_O, Qt::ControlModifier, [&title](QWidget* modal) {
      if (auto* d = qobject_cast<QFileDialog*>(modal)) {
        title = d->windowTitle();
        d->reject();
      }
    });
    QCOMPARE(title, QString("Open run file, dump or view"));
    QVERIFY(!w.offline());
    show_active(w);  // the dialog had the focus

    w.UI_openFile(three_fold_run_);
    waitOffline(w, three_fold_run_);
    QTest::keyClick(&w, Qt::Key_E, Qt::ControlModifier);  // Jump to entry point
    QCOMPARE(w.selectedFold(), 0);
    QCOMPARE(w.selectedStep(), 5);
    QCOMPARE(w.selectedSlot(), int(kBnDConcat));
    // Home and End in the step grid: the fold's first and last steps.
    w.stepPlot()->setFocus();
    QTest::keyClick(w.stepPlot(), Qt::Key_End);
    QCOMPARE(w.selectedStep(), 11);
    QTest::keyClick(w.stepPlot(), Qt::Key_Home);
    QCOMPARE(w.selectedStep(), 0);
    // Ctrl+0 after a zoom: every step of the fold in view again.
    w.stepPlot()->xAxis->setRange(2, 4);
    w.stepPlot()->replot();
    QTest::keyClick(&w, Qt::Key_0, Qt::ControlModifier);
    QCOMPARE(w.stepPlot()->columnRange().lower, -0.5);
    QCOMPARE(w.stepPlot()->columnRange().upper, 11.5);
    // Ctrl+F: follow the newest step, on and off.
    const bool follow = w.followAction()->isChecked();
    QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
    QCOMPARE(w.followAction()->isChecked(), !follow);
    QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
    QCOMPARE(w.followAction()->isChecked(), follow);
    // Every entry of the View menu has a title (a toolbar's toggle once showed as a blank line).
    for (QAction* m : w.menuBar()->actions())
      if (m->text().remove('&') == "View")
        for (QAction* a : m->menu()->actions())
          QVERIFY2(a->isSeparator() || !a->text().trimmed().isEmpty(), "an untitled View entry");
    // F1: the table of every shortcut.
    QTest::keyClick(&w, Qt::Key_F1);
    auto* keys = w.findChild<QDialog*>("shortcutsDialog");
    QVERIFY(keys && keys->isVisible());
    QVERIFY(!keys->findChild<QTableWidget*>()->findItems("Ctrl+L", Qt::MatchExactly).isEmpty());
    keys->close();
    // Ctrl+L: back to the live run.
    QTest::keyClick(&w, Qt::Key_L, Qt::ControlModifier);
    QTRY_VERIFY(!w.offline());
    QVERIFY(w.hasLiveSession());
  }
};

NANSCOPE_GUI_TEST("shortcuts", ShortcutsTest);
#include "shortcuts_test.moc"
