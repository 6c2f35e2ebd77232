// Slot health in the workbench, driven through the real window (offscreen): on lr-explosion with
// watch.absmax set low, the grid shows the warned cells before the fire, the magnitude view shows
// the trunk's activations growing by decades, and step compare names the slots that grew and marks
// them in the grids; the user picks other steps and gets the default back; live steps carry their
// health; a run without health says so.
#include <QApplication>
#include <QDockWidget>
#include <QSpinBox>
#include <QStackedWidget>
#include <QtTest>
#include <cmath>

#include <QMenu>

#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"
#include "plots/magnitude_plot.h"
#include "session/scenarios.h"
#include "widgets/compare_panel.h"

using namespace nanscope;
using namespace nanscope::gui;
using namespace nanscope::gui_test;

namespace {

// The colour drawn in a cell (a plot of the window, grabbed as the user sees it), off its centre
// where a glyph may be and off its edges where outlines are.
QColor pixel_at(QCustomPlot* plot, int column, int slot) {
  const QImage img = plot->toPixmap().toImage();
  return QColor(img.pixel(static_cast<int>(plot->xAxis->coordToPixel(column - 0.3)),
                          static_cast<int>(plot->yAxis->coordToPixel(row_of_slot(slot) - 0.25))));
}

// Whether the jump outline's colour is drawn along a cell's left edge.
bool outlined(QCustomPlot* plot, int column, int slot) {
  const QImage img = plot->toPixmap().toImage();
  const int x = static_cast<int>(std::lround(plot->xAxis->coordToPixel(column - 0.5)));
  const int y0 = static_cast<int>(plot->yAxis->coordToPixel(row_of_slot(slot) - 0.5));
  const int y1 = static_cast<int>(plot->yAxis->coordToPixel(row_of_slot(slot) + 0.5));
  for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y)
    for (int dx = -1; dx <= 1; ++dx)
      if (QColor(img.pixel(x + dx, y)) == jump_outline()) return true;
  return false;
}

}  // namespace

class HealthViewsTest : public QObject, public GuiFixture {
  Q_OBJECT

  QString lr_explosion_;  // lr-explosion at the default size, 6 steps, watch.absmax=1e6
  QString health_off_;

  QString runOf(const QString& name, const std::string& scenario,
                const std::vector<std::string>& sets) {
    ConfigBuilder b;
    b.load_text(find_scenario(scenario)->toml, scenario);
    for (const auto& s : sets) b.set(s);
    return recordRun(name, b.build());
  }

 private Q_SLOTS:
  void initTestCase() {
    setUpCase();
    lr_explosion_ =
        runOf("lrx", "lr-explosion",
              {"run.folds=1", "run.steps_per_fold=6", "halt.on_fire=never", "watch.absmax=1e6"});
    std::vector<std::string> small;
    for (const auto& s : kSmall) small.push_back(s.toStdString());
    small.push_back("sentinel.health=false");
    health_off_ = runOf("off", "healthy", small);
  }

  // Two watch trips at one step on one slot (slot 21's group norms) differ in the events view by
  // their detail: condition, group, value and threshold, live and from the run file.
  void theEventsViewNamesEachWatchTrip() {
    // The detail texts of the watch rows at step 0, as the events view shows them ("" when its
    // detail column is hidden or misnamed).
    auto details_at_step0 = [](MainWindow& w) {
      auto* view = w.findChild<QTableView*>("eventsView");
      const QAbstractItemModel* m = view->model();
      QStringList out;
      if (view->isColumnHidden(EventsModel::Detail) ||
          m->headerData(EventsModel::Detail, Qt::Horizontal).toString() != "detail")
        return QStringList{""};
      for (int r = 0; r < m->rowCount(); ++r)
        if (m->index(r, EventsModel::Kind).data().toString() == "watch" &&
            m->index(r, EventsModel::Step).data().toInt() == 0)
          out << m->index(r, EventsModel::Detail).data().toString();
      return out;
    };
    const QStringList trips = {"run.folds=1", "run.steps_per_fold=2", "watch.grad_explode=1e-12"};
    QStringList live, offline;
    {
      MainWindow w(settings("healthy", trips));
      w.show();
      waitReady(w);
      w.UI_run(EngineController::UntilFoldEnd);
      QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->global_step == 2, 30000);
      live = details_at_step0(w);
      // Double-clicking a watch trip selects its cell (it has no dump): its fold, step and slot,
      // and the inspector says what is kept of that step.
      auto* view = w.findChild<QTableView*>("eventsView");
      const QAbstractItemModel* m = view->model();
      int row = 0;
      while (row < m->rowCount() && m->index(row, EventsModel::Kind).data().toString() != "watch")
        ++row;
      QVERIFY(row < m->rowCount());
      const int slot = m->index(row, 0).data(EventsModel::SlotRole).toInt();
      QVERIFY(slot >= 0);
      Q_EMIT view->doubleClicked(m->index(row, EventsModel::Detail));
      QCOMPARE(w.selectedSlot(), slot);
      QCOMPARE(w.selectedStep(), m->index(row, EventsModel::Step).data().toInt());
      QTRY_COMPARE(w.viewState()["inspector"].toObject()["slot"].toInt(), slot);
      // F8 walks watch trips too (nothing fired in this run), and not once they are turned off in
      // View > F8 walks.
      w.UI_selectCell(kBatch, 0, -1);  // no step selected: before every event of the fold
      w.activateWindow();
      QVERIFY(QTest::qWaitForWindowActive(&w));
      QTest::keyClick(&w, Qt::Key_F8);
      QCOMPARE(w.selectedStep(), 0);
      QMenu* walks = nullptr;
      for (QMenu* menu : w.findChildren<QMenu*>())
        if (menu->title() == "F8 walks") walks = menu;
      QVERIFY(walks);
      for (QAction* a : walks->actions())
        if (a->text() == "watch trips") a->setChecked(false);
      QTest::keyClick(&w, Qt::Key_F8);
      QCOMPARE(w.selectedStep(), 0);  // nothing else to walk to: the selection stays
      QVERIFY2(w.statusBar()->currentMessage().contains("no later event"),
               qPrintable(w.statusBar()->currentMessage()));
    }
    QVERIFY2(live.size() >= 2, qPrintable(live.join(" | ")));
    QVERIFY2(live.filter("grad_explode on group encoder: ").size() == 1,
             qPrintable(live.join(" | ")));
    QVERIFY2(live.filter("grad_explode on group value: ").size() == 1,
             qPrintable(live.join(" | ")));
    for (const QString& d : live) QVERIFY2(d.endsWith(" against 1e-12"), qPrintable(d));
    QCOMPARE(QSet<QString>(live.begin(), live.end()).size(), live.size());

    std::vector<std::string> sets;
    for (const auto& s : kSmall + trips) sets.push_back(s.toStdString());
    const QString file = runOf("gx", "healthy", sets);
    MainWindow w(settings("healthy"), file);
    w.show();
    waitOffline(w, file);
    offline = details_at_step0(w);
    QCOMPARE(offline, live);
  }

  void warnedCellsComeBeforeTheFire() {
    MainWindow w(settings("healthy"), lr_explosion_);
    w.show();
    waitOffline(w, lr_explosion_);
    const auto snap = w.snapshot();
    QVERIFY(snap->entry.has_value());
    QCOMPARE(snap->entry->step, 1);
    int first_watch = -1;
    for (const auto& e : snap->events)
      if (e.kind == EventKind::Watch && first_watch < 0) first_watch = e.step;
    QCOMPARE(first_watch, 0);  // the params' absmax trips at step 0; the first fire is step 1
    QCOMPARE(step_code(w, kParams, 0), int(kCellWarned));
    QCOMPARE(step_code(w, kHS2, 1), int(kCellWarned));  // grew past 1e6 at 1, fires at 2
    QCOMPARE(step_code(w, kHS2, 2), int(kCellNaN));
    QCOMPARE(pixel_at(w.stepPlot(), 0, kParams), cell_color(kCellWarned));
  }

  void theMagnitudeViewShowsTheGrowth() {
    MainWindow w(settings("healthy"), lr_explosion_);
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    waitOffline(w, lr_explosion_);
    QVERIFY(!w.magnitudeShown());
    QTest::keyClick(&w, Qt::Key_2, Qt::ControlModifier);  // View > Step grid: magnitude
    QVERIFY(w.magnitudeShown());
    QVERIFY(w.magnitudePlot()->isVisible());
    QCOMPARE(w.viewState()["step_grid"].toObject()["view"].toString(), QString("magnitude"));
    MagnitudePlot* m = w.magnitudePlot();
    QCOMPARE(m->columnCount(), 6);
    const double before = m->value(kHS2, 0), after = m->value(kHS2, 1);
    QVERIFY2(before < 1 && after > 27, qPrintable(QString("%1 -> %2").arg(before).arg(after)));
    // The scale spans the fold's magnitudes in whole decades.
    QVERIFY(m->scaleRange().upper >= std::ceil(after));
    QVERIFY(m->scaleRange().lower <= std::floor(before));
    // Drawn as the scale says: the grown cell in the scale's top colour, the small one far from it,
    // a cell with nothing finite in the NaN colour, a slot never checked white.
    QCOMPARE(pixel_at(m, 1, kHS2), m->colourOf(after));
    QCOMPARE(pixel_at(m, 0, kHS2), m->colourOf(before));
    QVERIFY(pixel_at(m, 0, kHS2) != pixel_at(m, 1, kHS2));
    QVERIFY(std::isinf(m->value(kBnZ, 3)));
    QCOMPARE(pixel_at(m, 3, kBnZ), cell_color(kCellNaN));
    QVERIFY(std::isnan(m->value(kEnsembleDLogits, 0)));  // deferred: not checked
    // A mostly-NaN buffer whose finite values are all 0 (Adam's moments after the blow-up) is
    // drawn non-finite, never as the smallest magnitude, and its tooltip counts the bad values.
    QVERIFY(std::isinf(m->value(kAdamMoments, 1)) && m->value(kAdamMoments, 1) > 0);
    QCOMPARE(pixel_at(m, 1, kAdamMoments), cell_color(kCellNaN));
    const float bad = w.snapshot()->health[1][kAdamMoments][kHealthNonfinite];
    QVERIFY(bad > 1000);
    QVERIFY2(m->nonfiniteText(kAdamMoments, 1)
                 .startsWith(QString("%1 non-finite value(s)").arg(static_cast<qint64>(bad))),
             qPrintable(m->nonfiniteText(kAdamMoments, 1)));
    // A measured cell's margin to float32's largest value, from its health row.
    const float margin = w.snapshot()->health[1][kHS2][kHealthOverflowMargin];
    QVERIFY(margin > 0 && margin < 128);
    QVERIFY2(m->marginText(kHS2, 1).contains(
                 QString("margin to overflow: %1 bits").arg(double(margin), 0, 'f', 1)),
             qPrintable(m->marginText(kHS2, 1)));
    QVERIFY(m->marginText(kEnsembleDLogits, 0).isEmpty());  // not measured
    // The colour bar's numbers are the finite scale; the non-finite band is not on it.
    QCOMPARE(m->barRange().upper, m->scaleRange().upper);
    QCOMPARE(m->barRange().lower, m->scaleRange().lower);
    QCOMPARE(pixel_at(m, 0, kEnsembleDLogits), magnitude_unmeasured());
    // A click on a cell selects it, as in the state view.
    const QPoint at(static_cast<int>(m->xAxis->coordToPixel(1)),
                    static_cast<int>(m->yAxis->coordToPixel(row_of_slot(kHS1))));
    QTest::mouseClick(m, Qt::LeftButton, {}, at);
    QCOMPARE(w.selectedSlot(), int(kHS1));
    QCOMPARE(w.selectedStep(), 1);
    QTest::keyClick(&w, Qt::Key_1, Qt::ControlModifier);
    QVERIFY(!w.magnitudeShown());
    QVERIFY(w.stepPlot()->isVisible());
  }

  void stepCompareNamesTheSlotsThatGrew() {
    MainWindow w(settings("healthy"), lr_explosion_);
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    waitOffline(w, lr_explosion_);
    w.findChild<QDockWidget*>("compareDock")->raise();
    ComparePanel* p = w.comparePanel();
    QVERIFY(p->isVisible());
    // The default: the last clean step and the first bad one.
    QVERIFY2(p->headline().contains("fold 0: step 0 vs step 1 (last clean / first bad)"),
             qPrintable(p->headline()));
    QTableView* t = p->table();
    auto cell = [t](int row, int column) {
      return t->model()->index(row, column).data().toString();
    };
    // The slots that went non-finite at step 1 head the table, then the trunk that grew.
    const SnapshotPtr snap = w.snapshot();
    int grown = 0;
    while (grown < t->model()->rowCount() &&
           snap->steps[1].flags[static_cast<std::size_t>(
               cell(grown, StepCompareModel::Slot).section(' ', 0, 0).toInt())] != 0)
      ++grown;
    QVERIFY(grown > 0);
    QCOMPARE(cell(grown, StepCompareModel::Slot), QString("2 h_s2"));
    QVERIFY2(cell(grown, StepCompareModel::Growth).startsWith("x1.4e+27"),
             qPrintable(cell(grown, StepCompareModel::Growth)));
    QCOMPARE(cell(grown + 1, StepCompareModel::Slot), QString("13 iqn_phi"));
    QCOMPARE(cell(grown + 2, StepCompareModel::Slot), QString("1 h_s1"));
    QCOMPARE(t->model()->index(0, 0).data(Qt::BackgroundRole).value<QBrush>().color(), jump_fill());
    QCOMPARE(t->model()->headerData(StepCompareModel::AbsMaxB, Qt::Horizontal).toString(),
             QString("|max| step 1"));
    // The jumped slots are outlined in the grid at step 1, and only the jumped ones.
    const auto marks = w.stepPlot()->marks();
    QVERIFY(std::count(marks.begin(), marks.end(), std::make_pair(int(kHS2), 1)) == 1);
    QVERIFY(std::count(marks.begin(), marks.end(), std::make_pair(int(kBatch), 1)) == 0);
    QVERIFY(outlined(w.stepPlot(), 1, kHS2));
    QVERIFY(!outlined(w.stepPlot(), 1, kBatch));
    const QJsonObject cmp = w.viewState()["compare"].toObject();
    QCOMPARE(cmp["step_a"].toInt(), 0);
    QCOMPARE(cmp["step_b"].toInt(), 1);
    QCOMPARE(cmp["rows"].toArray()[grown].toObject()["slot"].toInt(), int(kHS2));
    QCOMPARE(cmp["rows"].toArray()[grown].toObject()["jumped"].toBool(), true);

    // The user picks step 4 as B: compared, and said to be picked.
    auto* b = p->findChild<QSpinBox*>("compareStepB");
    b->setValue(4);
    QVERIFY2(p->headline().contains("step 0 vs step 4 (picked)"), qPrintable(p->headline()));
    QCOMPARE(w.viewState()["compare"].toObject()["step_b"].toInt(), 4);
    QCOMPARE(w.viewState()["compare"].toObject()["how"].toString(), QString("picked"));
    const auto marks4 = w.stepPlot()->marks();
    QVERIFY(!marks4.empty());
    for (const auto& [slot, step] : marks4) QCOMPARE(step, 4);
    // Ctrl+D gives the default pair back, and brings the dock forward over Events.
    w.findChild<QDockWidget*>("eventsDock")->raise();
    QTRY_VERIFY(!p->isVisible() || p->visibleRegion().isEmpty());
    QTest::keyClick(&w, Qt::Key_D, Qt::ControlModifier);
    QTRY_VERIFY(p->isVisible() && !p->visibleRegion().isEmpty());
    QVERIFY2(p->headline().contains("step 0 vs step 1 (last clean / first bad)"),
             qPrintable(p->headline()));
    // A row click selects its slot at the later step.
    const QRect r = t->visualRect(t->model()->index(grown + 2, 0));
    QTest::mouseClick(t->viewport(), Qt::LeftButton, {}, r.center());
    QCOMPARE(w.selectedSlot(), int(kHS1));
    QCOMPARE(w.selectedStep(), 1);
    QCOMPARE(w.stepPlot()->selection(), std::make_pair(int(kHS1), 1));
    w.grab().save(dir_.filePath("compare.png"));
  }

  void liveStepsCarryTheirHealth() {
    MainWindow w(settings("healthy"));
    w.show();
    waitReady(w);
    for (int i = 0; i < 3; ++i) w.UI_step();
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->global_step >= 3, 20000);
    QTRY_COMPARE_WITH_TIMEOUT(w.magnitudePlot()->columnCount(), 3, 5000);
    for (int step = 0; step < 3; ++step) {
      const double v = w.magnitudePlot()->value(kBatch, step);
      QVERIFY2(std::isfinite(v) && v > -3 && v < 3, qPrintable(QString::number(v)));
    }
    // Nothing fired or warned: the fold's first and last steps, nothing jumped on a healthy run.
    QVERIFY2(w.comparePanel()->headline().contains("step 0 vs step 2"),
             qPrintable(w.comparePanel()->headline()));
    QVERIFY(w.comparePanel()->model()->jumpedSlots().empty());
    QVERIFY(w.stepPlot()->marks().empty());
  }

  // An uneventful fold's first and last steps: the slot that grew tenfold (early training does)
  // leads the table, but neither the table nor the grid marks it jumped; once a watch trips
  // there, the same growth is.
  void anUneventfulFoldIsComparedWithoutMarks() {
    auto picture = [](bool watch) {
      auto u = std::make_shared<SnapshotUpdate>();
      u->reset = true;
      u->head.offline = true;
      u->head.finished = true;
      u->head.source = "made up";
      for (int step = 0; step < 3; ++step) {
        StepRow r;
        r.flags.assign(kBuiltinSlotCount, 0);
        r.step = step;
        r.checked = SlotSet::all(kBuiltinSlotCount);
        u->steps.push_back(r);
        SlotHealthRows rows = unmeasured_rows(kBuiltinSlotCount);
        for (HealthRow& h : rows) {
          h = HealthRow{-1, 1, 0, 0.5f, 0, 0, health_nan(), health_nan()};
        }
        rows[kHS1][kHealthMax] = step == 2 ? 100.f : 1.f;
        u->health.push_back(rows);
      }
      u->folds.resize(1);
      u->folds[0].slots.resize(kBuiltinSlotCount);
      if (watch) u->events.push_back(SnapshotEvent{0, 2, EventKind::Watch, kHS1, {}, std::nullopt});
      return u;
    };
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    waitOffline(w, three_fold_run_);
    w.UI_applyUpdate(picture(false));
    QVERIFY2(w.comparePanel()->headline().contains("step 0 vs step 2 (the fold's first / last"),
             qPrintable(w.comparePanel()->headline()));
    QVERIFY2(w.comparePanel()->headline().contains("no jumps marked"),
             qPrintable(w.comparePanel()->headline()));
    QVERIFY(w.comparePanel()->model()->jumpedSlots().empty());
    QCOMPARE(w.comparePanel()->model()->index(0, 0).data(StepCompareModel::SlotRole).toInt(),
             int(kHS1));
    QVERIFY(!w.comparePanel()->model()->index(0, 0).data(StepCompareModel::JumpedRole).toBool());
    QVERIFY(w.stepPlot()->marks().empty());
    w.UI_applyUpdate(picture(true));
    QCOMPARE(w.comparePanel()->model()->jumpedSlots(), std::vector<int>{kHS1});
    QVERIFY2(w.comparePanel()->headline().contains("step 1 vs step 2 (before the first watch"),
             qPrintable(w.comparePanel()->headline()));
    QCOMPARE(w.stepPlot()->marks(), (std::vector<std::pair<int, int>>{{kHS1, 2}}));
  }

  void aRunWithoutHealthSaysSo() {
    MainWindow w(settings("healthy"), health_off_);
    w.show();
    waitOffline(w, health_off_);
    QVERIFY(std::isnan(w.magnitudePlot()->value(kBatch, 0)));
    QVERIFY2(w.comparePanel()->headline().contains("no slot health at these steps"),
             qPrintable(w.comparePanel()->headline()));
    QCOMPARE(w.comparePanel()->model()->rowCount(), 0);
  }
};

NANSCOPE_GUI_TEST("health_views", HealthViewsTest);
#include "health_views_test.moc"
