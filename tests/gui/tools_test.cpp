// Finding and sharing in the real window (offscreen): slot health as metrics series, the go-to-step
// box, the slot name filter, a cell copied as text, view files, a watch trip announced in the
// status bar, a one-step event drawn at least 3 pixels wide, and the window title.
#include <QClipboard>
#include <QDockWidget>
#include <QLineEdit>
#include <QProgressBar>
#include <QScrollBar>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QToolBar>
#include <QtTest>

#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"
#include "models/health_series.h"
#include "models/slot_label.h"
#include "plots/grid_plot.h"
#include "plots/histogram_plot.h"
#include "plots/metrics_plot.h"

using namespace nanscope;
using namespace nanscope::gui;
using namespace nanscope::gui_test;

namespace {
QJsonObject state(MainWindow& w) {
  return w.viewState();
}
int visible_slot_rows(MainWindow& w) {
  return w.findChild<QTableView*>()->model()->rowCount();
}
}  // namespace

class ToolsTest : public QObject, public GuiFixture {
  Q_OBJECT

  // A run with a first fire in each of 12 folds (more events than the Events dock shows).
  QString makeManyEventsRun() {
    ConfigBuilder b;
    for (const auto& s : kSmall) b.set(s.toStdString());
    b.set("run.folds=12");
    b.set("run.steps_per_fold=4");
    b.set("data.bars=2400");
    b.set("halt.on_fire=never");
    b.set("guard.enabled=true");
    std::vector<std::string> faults;
    for (int f = 0; f < 12; ++f) faults.push_back("slot:bw_d_h_s2.iqn@" + std::to_string(f) + ":2");
    return recordRun("many_events", b.build(), faults);
  }

 private Q_SLOTS:
  void initTestCase() { setUpCase(); }

  // A slot's health field against the step, read from the run file's /steps/health: the plot's
  // read-out and CSV carry the file's numbers, beside the losses, on an axis of their own.
  void aSlotsHealthIsAMetricsSeries() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.resize(1500, 950);
    w.show();
    waitOffline(w, three_fold_run_);
    const RunFileData file = read_run_file(three_fold_run_.toStdString());
    QCOMPARE(file.steps.size(), std::size_t{36});
    QVERIFY(w.metrics()->addHealthSeries({kHS2, HealthMeasure::AbsMax}));
    QVERIFY(w.metrics()->addHealthSeries({kAuxPredNb, HealthMeasure::Nonfinite}));
    QVERIFY(!w.metrics()->addHealthSeries({kHS2, HealthMeasure::AbsMax}));  // shown already
    QVERIFY(w.metrics()->healthAxis()->visible());
    const QJsonArray shown = state(w)["metrics"].toObject()["health_series"].toArray();
    QCOMPARE(shown.size(), 2);
    QCOMPARE(shown[0].toString(), QString("h_s2:absmax"));
    QCOMPARE(shown[1].toString(), QString("aux_pred_nb:nonfinite"));
    // Fold 1, step 3 (global 15) is aux_pred_nb's fire: the read-out says how many are non-finite.
    const int g = 12 + 3;
    const HealthRow& aux = file.steps[static_cast<std::size_t>(g)].health[kAuxPredNb];
    QVERIFY(aux[kHealthNonfinite] > 0);
    QVERIFY2(w.metrics()->readout(g).contains(
                 QString("aux_pred_nb:nonfinite: %1").arg(aux[kHealthNonfinite])),
             qPrintable(w.metrics()->readout(g)));
    const double h_s2 = abs_max(file.steps[4].health[kHS2]);
    QVERIFY(std::isfinite(h_s2) && h_s2 > 0);
    QVERIFY2(w.metrics()->readout(4).contains(QString("h_s2:absmax: %1").arg(h_s2, 0, 'g', 5)),
             qPrintable(w.metrics()->readout(4)));
    // The CSV has both columns, every step, to full precision.
    const QString csv = dir_.filePath("health.csv");
    QVERIFY(w.metrics()->exportCsv(csv));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString(f.readAll()).split('\n', Qt::SkipEmptyParts);
    const QStringList header = lines[0].split(',');
    QCOMPARE(header.mid(header.size() - 2), QStringList({"h_s2:absmax", "aux_pred_nb:nonfinite"}));
    QCOMPARE(lines.size(), 1 + 36);
    QCOMPARE(lines[1 + 4].split(',').at(header.size() - 2).toDouble(), h_s2);
    QCOMPARE(lines[1 + g].split(',').back().toDouble(), double(aux[kHealthNonfinite]));
    w.metrics()->setLogScale(true);
    QCOMPARE(w.metrics()->healthAxis()->scaleType(), QCPAxis::stLogarithmic);
    w.metrics()->removeHealthSeries({kHS2, HealthMeasure::AbsMax});
    QCOMPARE(w.metrics()->healthSeries().size(), std::size_t{1});
    QString error;
    QVERIFY(!parse_health_series("h_s9:absmax", &error));
    QVERIFY2(error.contains("no slot named 'h_s9'"), qPrintable(error));
    QVERIFY(!parse_health_series("h_s2:maximum", &error));
    QVERIFY2(error.contains("absmax, rms"), qPrintable(error));
    // The reduced types' measures are series too: the margin to overflow, in bits.
    const auto margin = parse_health_series("h_s2:overflow_margin", &error);
    QVERIFY2(margin && margin->measure == HealthMeasure::OverflowMargin, qPrintable(error));
    const float bits = file.steps[4].health[kHS2][kHealthOverflowMargin];
    QVERIFY(bits > 0 && bits < 128);  // float32's 128 bits less log2 of h_s2's absmax
    QCOMPARE(health_value(file.steps[4].health[kHS2], HealthMeasure::OverflowMargin), double(bits));
  }

  // "go to step": the selected slot's cell at a step of this fold or another, brought into view;
  // anything else is refused with the range it could have been. The selection survives a fold
  // change.
  void goToStepSelectsTheCellAndRefusesWhatIsNotThere() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.resize(1500, 950);
    w.show();
    waitOffline(w, three_fold_run_);
    QVERIFY(w.UI_goTo("1:3"));  // no slot selected: nothing to go to
    QVERIFY2(w.statusBar()->currentMessage().contains("select a slot first"),
             qPrintable(w.statusBar()->currentMessage()));
    QCOMPARE(w.selectedSlot(), -1);
    w.UI_selectCell(kHS2, 0, 2);
    QVERIFY(!w.UI_goTo("-1:3"));  // a fold is a number from 0
    QCOMPARE(w.selectedStep(), 2);
    QVERIFY(w.UI_goTo("1:3"));
    QCOMPARE(w.selectedFold(), 1);
    QCOMPARE(w.selectedStep(), 3);
    QCOMPARE(w.selectedSlot(), int(kHS2));  // kept across the fold change
    QTRY_COMPARE(state(w)["inspector"].toObject()["step"].toInt(), 3);
    QVERIFY(w.UI_goTo("7"));  // this fold
    QCOMPARE(w.selectedFold(), 1);
    QCOMPARE(w.selectedStep(), 7);
    QVERIFY(!w.UI_goTo("abc"));
    QVERIFY2(w.statusBar()->currentMessage().contains("not STEP or FOLD:STEP"),
             qPrintable(w.statusBar()->currentMessage()));
    w.UI_goTo("1:12");
    QVERIFY2(w.statusBar()->currentMessage().contains("fold 1 has steps 0-11"),
             qPrintable(w.statusBar()->currentMessage()));
    w.UI_goTo("5:0");
    QVERIFY2(w.statusBar()->currentMessage().contains("fold 5 is not in the run (folds 0-2)"),
             qPrintable(w.statusBar()->currentMessage()));
    QCOMPARE(w.selectedStep(), 7);  // nothing moved
    // Typed into the toolbar's box.
    auto* box = w.findChild<QLineEdit*>("goToStep");
    QVERIFY(box);
    box->setText("2:5");
    QTest::keyClick(box, Qt::Key_Return);
    QCOMPARE(w.selectedFold(), 2);
    QCOMPARE(w.selectedStep(), 5);
  }

  // Ctrl+E centres the entry in the step grid, keeping the zoom.
  void jumpToEntryCentresIt() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.resize(1500, 950);
    w.show();
    waitOffline(w, three_fold_run_);
    w.UI_jumpToEntry();                       // the run's entry: fold 0, step 5
    w.stepPlot()->setColumnRange(8.5, 11.5);  // 3 steps, the entry out of view
    w.UI_jumpToEntry();
    const QCPRange r = w.stepPlot()->columnRange();
    QCOMPARE(r.size(), 3.0);
    QCOMPARE(r.center(), double(w.snapshot()->entry->step));
    QCOMPARE(w.selectedStep(), w.snapshot()->entry->step);
  }

  // The name filter narrows the Slots table; Enter selects the first match; the grids keep all.
  void theSlotFilterNarrowsTheTable() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.resize(1500, 950);
    w.show();
    waitOffline(w, three_fold_run_);
    QCOMPARE(visible_slot_rows(w), kBuiltinSlotCount);
    auto* filter = w.findChild<QLineEdit*>("slotFilter");
    QVERIFY(filter);
    QTest::keyClicks(filter, "BW_D");
    QCOMPARE(visible_slot_rows(w), 3);  // bw_d_h_s2.main, .aux, .iqn, any case
    QCOMPARE(state(w)["slot_filter"].toString(), QString("BW_D"));
    QTest::keyClick(filter, Qt::Key_Return);
    QCOMPARE(w.selectedSlot(), 33);  // the first in dataflow order
    auto* table = w.findChild<QTableView*>();
    QCOMPARE(table->selectionModel()->selectedRows().size(), 1);
    QCOMPARE(table->selectionModel()->selectedRows()[0].row(), 0);
    w.UI_selectSlot(kHS2);  // filtered out: no row is selected in the table
    QVERIFY(table->selectionModel()->selectedRows().isEmpty());
    QCOMPARE(w.foldGrid()->rowCount(), kBuiltinSlotCount);
    w.UI_setSlotFilter("");
    QCOMPARE(visible_slot_rows(w), kBuiltinSlotCount);
    QCOMPARE(table->selectionModel()->selectedRows().size(), 1);
  }

  // Edit > Copy cell summary puts the selected cell as text on the clipboard.
  void aCellIsCopiedAsText() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.resize(1500, 950);
    w.show();
    waitOffline(w, three_fold_run_);
    w.UI_copyCell();
    QVERIFY(w.statusBar()->currentMessage().contains("select a cell first"));
    w.UI_selectCell(kAuxPredNb, 1, 3);
    w.UI_copyCell();
    const QString text = QGuiApplication::clipboard()->text();
    QVERIFY2(text.contains("slot 17 aux_pred_nb, fold 1, step 3"), qPrintable(text));
    QVERIFY2(text.contains("global step 15; at this step: non-finite (nan)"), qPrintable(text));
    QVERIFY2(text.contains("in fold 1: first fired at step 3 (nan)"), qPrintable(text));
    QVERIFY2(text.contains("health: absmax"), qPrintable(text));
    QVERIFY2(text.contains(three_fold_run_), qPrintable(text));
    w.UI_selectCell(kHS2, 0, 1);
    w.UI_copyCell();
    QVERIFY2(QGuiApplication::clipboard()->text().contains("at this step: finite"),
             qPrintable(QGuiApplication::clipboard()->text()));
  }

  // A view file reopens the run file with the same selection, view, series and zoom, in a new
  // window; a broken one is refused naming the file and the key.
  void aViewFileReopensWhatWasShown() {
    const QString view = dir_.filePath("shared.nsview");
    QJsonObject saved;
    {
      MainWindow w(settings("healthy"), three_fold_run_);
      w.resize(1500, 950);
      w.show();
      waitOffline(w, three_fold_run_);
      w.UI_selectCell(kAuxPredNb, 1, 3);
      w.UI_showMagnitude(true);
      w.metrics()->setSeriesVisible(2, true);
      w.metrics()->addHealthSeries({kAuxPredNb, HealthMeasure::Rms});
      w.metrics()->setLogScale(true);
      w.stepPlot()->setColumnRange(1.5, 6.5);
      Q_EMIT w.stepPlot()->columnRangeChangedByUser(1.5, 6.5);
      QString error;
      QVERIFY2(w.saveViewFile(view, &error), qPrintable(error));
      saved = state(w);
    }
    MainWindow w(settings("healthy"));
    w.resize(1500, 950);
    w.show();
    waitReady(w);
    w.UI_openFile(view);  // File > Open takes a view file too
    waitOffline(w, three_fold_run_);
    QTRY_COMPARE(state(w)["selection"], saved["selection"]);
    const QJsonObject now = state(w);
    QCOMPARE(now["metrics"].toObject()["series"], saved["metrics"].toObject()["series"]);
    QCOMPARE(now["metrics"].toObject()["health_series"],
             saved["metrics"].toObject()["health_series"]);
    QCOMPARE(now["metrics"].toObject()["log_scale"].toBool(), true);
    bool log_checked = false;  // the toolbar says what the plot shows
    for (QAction* a : w.findChild<QToolBar*>("metricsTools")->actions())
      if (a->text() == "Log scale") log_checked = a->isChecked();
    QVERIFY(log_checked);
    QCOMPARE(now["step_grid"].toObject()["view"].toString(), QString("magnitude"));
    QCOMPARE(w.stepPlot()->columnRange().lower, 1.5);
    QCOMPARE(w.stepPlot()->columnRange().upper, 6.5);
    QTRY_COMPARE(state(w)["inspector"].toObject()["slot"].toInt(), int(kAuxPredNb));
    // Broken: not JSON, another version, a run file that is gone.
    QSignalSpy errors(&w, &MainWindow::errorShown);
    for (const auto& [text, why] :
         {std::pair{QByteArray("{not json"), QString("not JSON at byte")},
          {QByteArray(R"({"nanscope_view": 9})"), QString("key nanscope_view: expected 1")},
          {QByteArray(R"({"nanscope_view": 1, "run_file": "/nowhere/run.h5"})"),
           QString("key run_file: /nowhere/run.h5 is not there")}}) {
      const QString bad = dir_.filePath("bad.nsview");
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(text);
      f.close();
      w.UI_openFile(bad);
      QVERIFY(errors.count() > 0);
      const QString message = errors.takeLast().at(0).toString();
      QVERIFY2(message.contains(bad) && message.contains(why), qPrintable(message));
    }
    QVERIFY(w.offline());  // the shown file stays
    QCOMPARE(state(w)["selection"], saved["selection"]);
    // What a view names that the run lacks is skipped and said; a key it lacks changes nothing.
    const QString partly = dir_.filePath("partly.json");  // told apart by content, not name
    QFile p(partly);
    QVERIFY(p.open(QIODevice::WriteOnly | QIODevice::Truncate));
    p.write(QJsonDocument(QJsonObject{{"nanscope_view", 1},
                                      {"run_file", three_fold_run_},
                                      {"slot", "nosuchslot"},
                                      {"fold", 7},
                                      {"health_series", QJsonArray{"h_s9:absmax", "h_s2:rms"}}})
                .toJson());
    p.close();
    const QJsonArray series_before = state(w)["metrics"].toObject()["series"].toArray();
    w.UI_openFile(partly);
    QVERIFY(errors.count() > 0);
    const QString said = errors.takeLast().at(0).toString();
    QVERIFY2(said.startsWith("view restored, except: ") &&
                 said.contains("slot 'nosuchslot' (no such slot)") &&
                 said.contains("fold 7 (the run has folds 0-2)") &&
                 said.contains("no slot named 'h_s9'"),
             qPrintable(said));
    QCOMPARE(state(w)["metrics"].toObject()["series"].toArray(), series_before);
    QCOMPARE(state(w)["metrics"].toObject()["health_series"].toArray(), QJsonArray{"h_s2:rms"});
    // A view whose run file is a view file (itself) is refused, not followed round and round.
    const QString loop = dir_.filePath("loop.nsview");
    QFile l(loop);
    QVERIFY(l.open(QIODevice::WriteOnly | QIODevice::Truncate));
    l.write(R"({"nanscope_view": 1, "run_file_relative": "loop.nsview"})");
    l.close();
    w.UI_openFile(loop);
    QVERIFY(errors.count() > 0);
    QVERIFY2(errors.takeLast().at(0).toString().contains("is a view file, not a run file"),
             "a view naming itself");
    // A view whose run file is refused is dropped: the next file opened by hand is shown as is.
    const QString corrupt = dir_.filePath("corrupt.h5");
    QFile c(corrupt);
    QVERIFY(c.open(QIODevice::WriteOnly | QIODevice::Truncate));
    c.write("not an HDF5 file at all");
    c.close();
    const QString stale = dir_.filePath("stale.nsview");
    QFile st(stale);
    QVERIFY(st.open(QIODevice::WriteOnly | QIODevice::Truncate));
    st.write(QJsonDocument(QJsonObject{{"nanscope_view", 1},
                                       {"run_file", corrupt},
                                       {"fold", 2},
                                       {"step", 7},
                                       {"slot", "c51_loss"}})
                 .toJson());
    st.close();
    w.UI_openFile(stale);
    QTRY_VERIFY(errors.count() > 0);
    errors.clear();
    const QString other = makeManyEventsRun();
    w.UI_openFile(other);
    QTRY_VERIFY(w.snapshot()->source.endsWith("many_events/run.h5"));
    QCOMPARE(w.selectedSlot(), -1);  // nothing of the stale view
    QCOMPARE(w.selectedFold(), 0);
  }

  // A watch that trips during a live run says so in the status bar, and the title names the run.
  void aLiveWatchTripIsAnnounced() {
    MainWindow w(settings("healthy", {"watch.grad_explode=1e-9"}));
    w.resize(1500, 950);
    w.show();
    waitReady(w);
    QVERIFY2(w.windowTitle().startsWith("healthy (live"), qPrintable(w.windowTitle()));
    w.UI_step();
    QTRY_VERIFY(w.snapshot()->global_step >= 1);
    QTRY_VERIFY2(w.statusBar()->currentMessage().startsWith("watch trip at fold 0, step 0: "),
                 qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(w.statusBar()->currentMessage().contains("grad_explode"));
    // The run's end says it fired nothing, and that the watch tripped.
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->finished && !w.running(), 60000);
    QVERIFY2(w.statusText().contains("nothing fired; ") &&
                 w.statusText().contains("(the first at fold 0, step 0)"),
             qPrintable(w.statusText()));
    // The health menu names the slot it adds.
    w.UI_selectCell(kHS2, 0, 3);
    bool named = false;
    for (QMenu* m : w.findChildren<QMenu*>())
      named |= m->title() == "Add the health of " + slot_label(kHS2);
    QVERIFY(named);
  }

  // A live window closed (or restarted) before its first step leaves no runs/gui-* folder; one
  // that stepped keeps its files.
  void aRunWithoutStepsLeavesNoFolder() {
    const QString root = dir_.filePath("launches");
    auto launch = [&](bool step) {
      EngineSettings s = settings("healthy");
      s.out_root = root;
      MainWindow w(s);
      w.show();
      waitReady(w);
      QVERIFY(QFileInfo::exists(w.snapshot()->run_file));
      if (step) {
        w.UI_step();
        QTRY_COMPARE(w.snapshot()->global_step, 1);
      }
    };
    launch(false);
    QCOMPARE(QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 0);
    launch(true);
    const QStringList kept = QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(kept.size(), 1);
    QVERIFY(QFileInfo::exists(QDir(root).filePath(kept[0] + "/run.h5")));
  }

  // At the default layout the Events dock shows its columns without scrolling sideways, the
  // progress bar holds its longest text on one line, and the inspector's histogram labels of tiny
  // values do not overprint.
  void theDefaultLayoutFitsItsText() {
    QSettings().clear();  // the default layout
    MainWindow w(settings("healthy"), makeManyEventsRun());
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTRY_VERIFY(w.offline() && w.snapshot());
    auto* events = w.findChild<QTableView*>("eventsView");
    QVERIFY(events->model()->rowCount() > 8);  // more rows than the dock shows: a vertical bar
    w.findChild<QDockWidget*>("eventsDock")->raise();
    QApplication::processEvents();
    int columns = 0;
    for (int c = 0; c < events->model()->columnCount(); ++c) columns += events->columnWidth(c);
    QVERIFY2(
        events->horizontalScrollBar()->maximum() == 0,
        qPrintable(
            QString("columns %1 px, view %2 px").arg(columns).arg(events->viewport()->width())));
    QProgressBar* progress = w.progressBar();
    const QString longest = QString("%1 / %2 steps").arg(99 * 99999).arg(99 * 99999);
    QVERIFY(progress->fontMetrics().horizontalAdvance(longest) < progress->width());
    // Tiny finite values: a handful of short labels, apart from each other.
    BufferStats s;
    s.computed = true;
    s.count = 4;
    s.histogram_edges = {1.0e-7, 1.1e-7, 1.2e-7, 1.3e-7};
    s.histogram = {1, 2, 1};
    HistogramPlot plot;
    plot.resize(340, 180);
    plot.setStats(s);
    plot.replot();
    const QVector<double> ticks = plot.xAxis->tickVector();
    const QVector<QString> labels = plot.xAxis->tickVectorLabels();
    QVERIFY(ticks.size() >= 2);
    const QFontMetrics fm(plot.xAxis->tickLabelFont());
    for (int i = 1; i < ticks.size(); ++i) {
      const double gap =
          plot.xAxis->coordToPixel(ticks[i]) - plot.xAxis->coordToPixel(ticks[i - 1]);
      const double need =
          (fm.horizontalAdvance(labels[i]) + fm.horizontalAdvance(labels[i - 1])) / 2.0;
      QVERIFY2(gap > need, qPrintable(QString("labels %1 and %2: %3 px apart, %4 px wide")
                                          .arg(labels[i - 1], labels[i])
                                          .arg(gap)
                                          .arg(need)));
    }
  }

  // A series with a single finite value (every other step NaN) gets an axis whose ticks read apart,
  // not one label repeated.
  void aSingleFiniteValueGetsReadableTicks() {
    Snapshot s;
    for (int g = 0; g < 12; ++g) {
      StepRow r;
      r.flags.assign(kBuiltinSlotCount, 0);
      r.step = g;
      const double nan = std::numeric_limits<double>::quiet_NaN();
      r.losses.total = g == 0 ? 3.93535 : nan;
      r.losses.c51 = g == 0 ? 3.93535 : nan;
      r.losses.grad_norm = g == 0 ? 0.122147 : nan;
      s.steps.push_back(r);
      s.health.push_back(unmeasured_rows(kBuiltinSlotCount));
    }
    s.fold_begin = {0};
    s.folds.resize(1);
    s.folds[0].slots.resize(kBuiltinSlotCount);
    MetricsPlot plot;
    plot.resize(640, 240);
    plot.setView(&s);
    plot.replot();
    for (QCPAxis* axis : {plot.yAxis, plot.yAxis2}) {
      const QVector<QString> labels = axis->tickVectorLabels();
      QVERIFY(labels.size() >= 2);
      QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
    }
  }

  // One step's event in a grid of thousands of steps is drawn at least 3 pixels wide.
  void aOneStepEventIsAtLeastThreePixelsWide() {
    Snapshot s;
    for (int g = 0; g < 5000; ++g) {
      StepRow r;
      r.flags.assign(kBuiltinSlotCount, 0);
      r.step = g;
      r.checked = SlotSet::all(kBuiltinSlotCount);
      if (g == 0) r.flags[kHS2] = kKindNaN;  // under the y axis, the sliver of the walkthrough
      s.steps.push_back(r);
    }
    s.fold_begin = {0};
    s.folds.resize(1);
    s.folds[0].slots.resize(kBuiltinSlotCount);
    SlotGridModel model(SlotGridModel::Steps);
    model.setView(&s);
    GridPlot plot(&model);
    plot.resize(700, 600);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    QVERIFY(plot.columnsPerCell() > 5);
    const QImage img = plot.toPixmap().toImage();
    QVERIFY(plot.eventsWidened() >= 1);
    // The widest red line within the row's band (the axis's tick at the row's centre covers the
    // sliver's start on that one line).
    const int y = static_cast<int>(plot.yAxis->coordToPixel(row_of_slot(kHS2)));
    const QRect r = plot.axisRect()->rect();
    int red = 0;
    for (int dy = -3; dy <= 3; ++dy) {
      int line = 0;
      for (int x = r.left(); x <= r.right(); ++x)
        if (img.pixelColor(x, y + dy) == cell_color(kCellNaN)) ++line;
      red = std::max(red, line);
    }
    QVERIFY2(red >= 3, qPrintable(QString("%1 NaN pixels").arg(red)));
  }
};

NANSCOPE_GUI_TEST("tools", ToolsTest);
#include "tools_test.moc"
