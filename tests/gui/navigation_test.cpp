// The workbench at real size, driven through the real window and plots (offscreen): grids that
// pool the columns under a pixel so a single fire still shows, zoom and pan kept in step with the
// metrics, keyboard moves, jump to entry and next/previous first fire, every metrics series with a
// read-out and exports, the View and Help menus, the progress bar and the restart question.
#include <QApplication>
#include <QDockWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "backend_choice.h"
#include "core/config_io.h"
#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"
#include "plots/grid_plot.h"
#include "plots/metrics_plot.h"
#include "session/session.h"
#include "widgets/main_window.h"

using namespace nanscope;
using namespace nanscope::gui;
using namespace nanscope::gui_test;

namespace {
// One fold of `steps` clean steps with a single NaN in `slot` at step `fire`.
Snapshot one_fire(int steps, int slot, int fire) {
  Snapshot s;
  for (int g = 0; g < steps; ++g) {
    StepRow r;
    r.flags.assign(kBuiltinSlotCount, 0);
    r.step = g;
    r.checked = SlotSet::all(kBuiltinSlotCount);
    if (g == fire) r.flags[static_cast<std::size_t>(slot)] = kKindNaN;
    s.steps.push_back(r);
  }
  s.fold_begin = {0};
  s.folds.resize(1);
  s.folds[0].slots.resize(kBuiltinSlotCount);
  return s;
}

QWheelEvent wheel(QWidget* w, QPointF at, int clicks) {
  return QWheelEvent(at, w->mapToGlobal(at), QPoint(), QPoint(0, 120 * clicks), Qt::NoButton,
                     Qt::NoModifier, Qt::NoScrollPhase, false);
}

QAction* menu_action(MainWindow& w, const QString& menu, const QString& text) {
  for (QAction* m : w.menuBar()->actions())
    if (m->text().remove('&') == menu)
      for (QAction* a : m->menu()->actions())
        if (a->text().remove('&') == text) return a;
  return nullptr;
}
}  // namespace

class NavigationTest : public QObject, public GuiFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { setUpCase(); }

  // 100,000 steps in an 800-pixel grid: a single NaN still colours its pixel column (pooled, not
  // sampled), on screen as well as in the map.
  void aSingleFireShowsAtAnySize() {
    const int fire = 54'321;
    Snapshot big = one_fire(100'000, kAuxPredNb, fire);
    SlotGridModel model(SlotGridModel::Steps);
    model.setView(&big);
    GridPlot plot(&model);
    plot.resize(900, 700);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    QVERIFY(plot.columnsPerCell() > 50);
    QCOMPARE(plot.shownCode(kAuxPredNb, fire), int(kCellNaN));
    QCOMPARE(plot.shownCode(kAuxPredNb, 10), int(kCellClean));
    const QImage img = plot.toPixmap().toImage();
    const int y = static_cast<int>(plot.yAxis->coordToPixel(row_of_slot(kAuxPredNb)));
    const int x = static_cast<int>(plot.xAxis->coordToPixel(fire));
    bool red = false;
    for (int dx = -1; dx <= 1; ++dx)
      red = red || QColor(img.pixel(x + dx, y)) == cell_color(kCellNaN);
    QVERIFY2(red, "the fire's pixel column is not drawn in the NaN colour");
    // Pooling is per pixel column: a bin of one column is that column's code, for every row.
    std::vector<int> one;
    model.pooledCodes(fire, fire, 1, one);
    for (int r = 0; r < kBuiltinSlotCount; ++r)
      QCOMPARE(one[static_cast<std::size_t>(r)], model.code(r, fire));
  }

  void theWheelZoomsTheDragPansAndFollowStops() {
    Snapshot big = one_fire(400, kAuxPredNb, 200);
    SlotGridModel model(SlotGridModel::Steps);
    model.setView(&big);
    GridPlot plot(&model);
    plot.resize(700, 600);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    QVERIFY(plot.follow());
    const QPointF at(plot.xAxis->coordToPixel(200), plot.yAxis->coordToPixel(10));
    for (int i = 0; i < 6; ++i) {
      auto e = wheel(&plot, at, 1);
      QApplication::sendEvent(&plot, &e);
    }
    const QCPRange zoomed = plot.columnRange();
    QVERIFY2(zoomed.size() < 400 * 0.3, qPrintable(QString::number(zoomed.size())));
    QVERIFY(zoomed.contains(200));
    QVERIFY(!plot.follow());  // the user moved the view: scrub mode
    QVERIFY(plot.columnsPerCell() <= 1);
    // Cells are wide enough now for their kind's glyph.
    for (int i = 0; i < 12; ++i) {
      auto e = wheel(&plot, at, 1);
      QApplication::sendEvent(&plot, &e);
    }
    plot.replot();
    QVERIFY(plot.glyphsDrawn() > 0);
    const QCPRange before = plot.columnRange();
    QTest::mousePress(&plot, Qt::LeftButton, {}, at.toPoint());
    QTest::mouseMove(&plot, at.toPoint() - QPoint(120, 0));
    QTest::mouseRelease(&plot, Qt::LeftButton, {}, at.toPoint() - QPoint(120, 0));
    QVERIFY(plot.columnRange().lower > before.lower);  // dragged left: later steps come into view
    plot.zoomToFit();
    QCOMPARE(plot.columnRange().lower, -0.5);
    QCOMPARE(plot.columnRange().upper, 399.5);
  }

  void jumpToEntryAndFiresMoveTheSelection() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.offline() && w.snapshot(), 10000);
    menu_action(w, "View", "Jump to entry point")->trigger();
    QCOMPARE(w.selectedFold(), 0);
    QCOMPARE(w.selectedStep(), 5);
    QCOMPARE(w.selectedSlot(), int(kBnDConcat));
    QCOMPARE(w.stepPlot()->selection(), std::make_pair(int(kBnDConcat), 5));
    QTest::keyClick(&w, Qt::Key_F8);
    QCOMPARE(w.selectedFold(), 1);
    QCOMPARE(w.selectedStep(), 3);
    QCOMPARE(w.selectedSlot(), int(kAuxPredNb));
    QCOMPARE(w.stepGridLabel(), QString("slot x step (fold 1)"));
    QTest::keyClick(&w, Qt::Key_F8);
    QCOMPARE(w.selectedFold(), 2);
    QCOMPARE(w.selectedSlot(), int(kC51Loss));
    QTest::keyClick(&w, Qt::Key_F8, Qt::ShiftModifier);
    QCOMPARE(w.selectedFold(), 1);
    // Arrow keys in the step grid move the selected cell.
    w.stepPlot()->setFocus();
    QTest::keyClick(w.stepPlot(), Qt::Key_Right);
    QCOMPARE(w.selectedStep(), 4);
    QTest::keyClick(w.stepPlot(), Qt::Key_Down);
    QCOMPARE(w.selectedSlot(), SlotGridModel::slotOfRow(row_of_slot(kAuxPredNb) + 1));
  }

  // The Slots table highlights the selected slot whatever moved it: Ctrl+E (Ctrl held, which the
  // table would otherwise read as "toggle this row") and F8 leave one row, the selection's.
  void theSlotsTableHighlightsTheSelectedSlotAfterCtrlE() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.offline() && w.snapshot(), 10000);
    auto* table = w.findChild<QTableView*>("slotTable");
    QVERIFY(table);
    const auto highlighted = [&] {
      std::vector<int> slots;
      for (const QModelIndex& i : table->selectionModel()->selectedRows())
        slots.push_back(i.data(Qt::UserRole).toInt());
      return slots;
    };
    w.UI_selectCell(kHS2, 0, 2);
    QCOMPARE(highlighted(), std::vector<int>{int(kHS2)});
    w.activateWindow();
    QTest::keyClick(&w, Qt::Key_E, Qt::ControlModifier);
    QCOMPARE(w.selectedSlot(), int(kBnDConcat));
    QCOMPARE(highlighted(), std::vector<int>{int(kBnDConcat)});
    QTest::keyClick(&w, Qt::Key_E, Qt::ControlModifier);  // again: still that one row
    QCOMPARE(highlighted(), std::vector<int>{int(kBnDConcat)});
    QTest::keyClick(&w, Qt::Key_F8);
    QCOMPARE(highlighted(), std::vector<int>{int(kAuxPredNb)});
  }

  // Another run file opened: nothing of the old selection stays drawn (the table's highlight, the
  // grids' frames), as the selection and the inspector are cleared.
  void anotherFileLeavesNoOldSelectionDrawn() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.offline() && w.snapshot(), 10000);
    w.UI_selectCell(kHS2, 1, 4);
    QCOMPARE(w.stepPlot()->selection(), std::make_pair(int(kHS2), 4));
    w.findChild<QLineEdit*>("slotFilter")->setText("h_");
    w.findChild<QLineEdit*>("goToStep")->setText("1:4");
    const QString other = makeThreeFoldRun("other");
    w.UI_openRunFile(other);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot() && w.snapshot()->source == other, 10000);
    QCOMPARE(w.selectedSlot(), -1);
    QCOMPARE(w.stepPlot()->selection().first, -1);
    QCOMPARE(w.foldPlot()->selection().first, -1);
    QVERIFY(w.findChild<QTableView*>("slotTable")->selectionModel()->selectedRows().isEmpty());
    // Nor the name filter's or the go-to box's text, which were about the other file.
    QVERIFY(w.findChild<QLineEdit*>("slotFilter")->text().isEmpty());
    QVERIFY(w.findChild<QLineEdit*>("goToStep")->text().isEmpty());
    QCOMPARE(w.viewState()["slot_table_rows"].toInt(), static_cast<int>(shown_slot_count()));
  }

  void theStepGridAndTheMetricsZoomTogether() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.resize(1500, 950);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.offline() && w.snapshot(), 10000);
    w.UI_selectFold(1);  // global steps 12..23
    GridPlot* grid = w.stepPlot();
    const QPointF at(grid->xAxis->coordToPixel(6), grid->yAxis->coordToPixel(5));
    auto e = wheel(grid, at, 3);
    QApplication::sendEvent(grid, &e);
    const QCPRange g = grid->columnRange(), m = w.metrics()->stepRange();
    QVERIFY(g.size() < 11);
    QVERIFY(std::abs(m.lower - (g.lower + 12)) < 1e-9 && std::abs(m.upper - (g.upper + 12)) < 1e-9);
    QVERIFY(!w.followAction()->isChecked());
    w.UI_zoomToFit();
    QCOMPARE(w.metrics()->stepRange().upper, 35.5);
  }

  void everySeriesCanBePickedReadAndExported() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.offline() && w.snapshot(), 10000);
    MetricsPlot* m = w.metrics();
    QCOMPARE(MetricsPlot::kSeriesCount, 16);
    for (int i = 0; i < MetricsPlot::kSeriesCount; ++i) m->setSeriesVisible(i, true);
    const QString r = m->readout(12 + 3);  // fold 1's fire step: its loss is not finite
    QVERIFY2(r.startsWith("step 15 (fold 1, step 3)"), qPrintable(r));
    for (const char* name :
         {"total loss", "c51", "mse", "cql", "iqn", "aux", "ens", "grad norm", "grad norm encoder"})
      QVERIFY2(r.contains(QString("\n%1: ").arg(name)), qPrintable(name));
    QVERIFY(!m->nonfiniteRanges().empty());
    m->setLogScale(true);
    QVERIFY(m->logScale());
    const QString csv = dir_.filePath("series.csv");
    QVERIFY(m->exportCsv(csv));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 36);
    QCOMPARE(lines[0].split(',').size(), 3 + 16);
    QVERIFY(lines[0].contains(",grad_norm,loss_scale,"));
    QVERIFY(lines[0].startsWith("global_step,fold,step,total_loss,c51,mse"));
    QVERIFY(lines[1 + 15].split(',')[3] == "nan" || lines[1 + 15].split(',')[3] == "inf");
    const QString png = dir_.filePath("metrics.png");
    QVERIFY(m->savePng(png));
    QVERIFY(QImage(png).width() > 100);
  }

  void menusProgressAndTheRestartQuestion() {
    MainWindow w(settings("healthy"));
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot() && w.hasLiveSession(), 10000);
    QVERIFY(w.stepPlot()->showsEmptyState());
    QVERIFY(w.metrics()->showsEmptyState());
    // View lists every dock; Help has the shortcuts and About with the library versions.
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
      QVERIFY2(menu_action(w, "View", d->windowTitle()), qPrintable(d->windowTitle()));
    menu_action(w, "Help", "About nanscope")->trigger();
    auto* about = w.findChild<QMessageBox*>("aboutBox");
    QVERIFY(about && about->text().contains(QString("Qt ") + qVersion()) &&
            about->text().contains("HDF5 1."));
    // Which CUDA backend was found, or why none: the plugin and the device, or the reason.
    const QString cuda = QString::fromStdString(cuda_description());
    QVERIFY2(cuda.startsWith("CUDA plugin ") || cuda.startsWith("no CUDA plugin (") ||
                 cuda.startsWith("the CUDA plugin "),
             qPrintable(cuda));
    QVERIFY2(about->text().contains(cuda.toHtmlEscaped()), qPrintable(about->text()));
    about->close();
    // A live run on the CPU says in the status bar why it is not on CUDA, the reason in the
    // tooltip.
    const QString status = w.viewState()["status_backend"].toString();
    QVERIFY2(status.startsWith("cpu [") && status.endsWith(QString::fromUtf8(" \u00b7 ") +
                                                           QString::fromStdString(cuda_summary())),
             qPrintable(status));
    QVERIFY(QString::fromStdString(cuda_summary()).startsWith("CUDA: "));
    menu_action(w, "Help", "Keyboard shortcuts")->trigger();
    auto* keys = w.findChild<QDialog*>("shortcutsDialog");
    QVERIFY(keys);
    auto* table = keys->findChild<QTableWidget*>();
    QVERIFY(!table->findItems("F10", Qt::MatchExactly).isEmpty());
    QVERIFY(!table->findItems("Ctrl+E", Qt::MatchExactly).isEmpty());
    keys->close();
    for (int i = 0; i < 3; ++i) w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 3);
    QCOMPARE(w.progressBar()->value(), 3);
    QCOMPARE(w.progressBar()->maximum(), 2 * 20);
    QVERIFY(!w.stepPlot()->showsEmptyState());
    // Restarting a run with history asks first; Cancel keeps the run.
    menu_action(w, "Run", "Stop")->trigger();
    auto* box = w.findChild<QMessageBox*>("restartBox");
    QVERIFY(box && box->isVisible());
    for (auto* b : box->buttons())
      if (box->buttonRole(b) == QMessageBox::RejectRole) b->click();
    QTest::qWait(300);
    QCOMPARE(w.snapshot()->global_step, 3);
    menu_action(w, "Run", "Stop")->trigger();
    box = w.findChild<QMessageBox*>("restartBox");
    for (auto* b : box->buttons())
      if (b->text() == "Restart") b->click();
    QTRY_COMPARE(w.snapshot()->global_step, 0);
  }
};

NANSCOPE_GUI_TEST("navigation", NavigationTest);
#include "navigation_test.moc"
