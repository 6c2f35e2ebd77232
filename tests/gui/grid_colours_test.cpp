// What the grids draw: every cell state's colour (clean, NaN, +Inf, -Inf, mixed, warned, absent,
// deferred, disabled) read back from the rendered slot x fold and slot x step grids of a run file
// that holds each of them, and the colour key under the grids drawn in the palette's colours.
#include <QLabel>

#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"
#include "style/cell_palette.h"

using namespace nanscope::gui_test;

namespace {

struct Cell {
  int slot, column, code;
};

// The colour drawn inside a cell: left of its centre, clear of the glyph (centred) and of the
// entry, selection and jump outlines (on its edges).
QColor drawn(GridPlot* plot, const QImage& img, int column, int slot) {
  const double cx = plot->xAxis->coordToPixel(column);
  const double width =
      plot->xAxis->coordToPixel(column + 0.5) - plot->xAxis->coordToPixel(column - 0.5);
  const int x = static_cast<int>(cx - 0.3 * width);
  const int y = static_cast<int>(plot->yAxis->coordToPixel(row_of_slot(slot)));
  return QColor(img.pixel(x, y));
}

void expect_drawn(GridPlot* plot, const std::vector<Cell>& cells, const char* grid) {
  plot->replot();
  const QImage img = plot->toPixmap().toImage();
  for (const Cell& c : cells) {
    QCOMPARE(plot->shownCode(c.slot, c.column), c.code);
    const QColor got = drawn(plot, img, c.column, c.slot);
    QVERIFY2(got == cell_color(c.code),
             qPrintable(QString("%1: slot %2, column %3 (%4) drawn %5, the palette's %6")
                            .arg(grid)
                            .arg(c.slot)
                            .arg(c.column)
                            .arg(cell_text(c.code), got.name(), cell_color(c.code).name())));
  }
}

}  // namespace

class GridColoursTest : public QObject, GuiFixture {
  Q_OBJECT

  QString every_state_run_;

  // Two folds of six steps. Fold 0: q_expected NaN and +Inf at step 3 (mixed), h_s1 NaN at step 4;
  // fold 1: aux_loss +Inf at step 1, c51_loss -Inf at step 2. The guard keeps each fire in its
  // step. adv_logits off (disabled), no IQN head (absent), ensemble_d_logits deferred as always;
  // a C51 mass watch at 1e-12 trips on the C51 rows (warned) at step 0 of each fold.
  QString makeEveryStateRun() {
    ConfigBuilder b;
    for (const auto& s : kSmall) b.set(s.toStdString());
    for (const char* s :
         {"run.folds=2", "run.steps_per_fold=6", "halt.on_fire=never", "guard.enabled=true",
          "loss.lambda_iqn=0", "sentinel.disabled=[5]", "watch.c51_mass=1e-12"})
      b.set(s);
    return recordRun("every_state", b.build(),
                     {"slot:q_expected@0:3:nan:0", "slot:q_expected@0:3:posinf:1", "slot:h_s1@0:4",
                      "slot:aux_loss@1:1:posinf", "slot:c51_loss@1:2:neginf"});
  }

 private Q_SLOTS:
  void initTestCase() {
    setUpCase();
    every_state_run_ = makeEveryStateRun();
  }

  void everyStateIsDrawnInItsColour() {
    MainWindow w(settings("healthy"), every_state_run_);
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    waitOffline(w, every_state_run_);
    expect_drawn(w.foldPlot(),
                 {{kBatch, 0, kCellClean},
                  {kHS1, 0, kCellNaN},
                  {kQExpected, 0, kCellMixed},
                  {kTargetLogProbs, 0, kCellWarned},
                  {kAdvLogits, 0, kCellDisabled},
                  {kIqnTau, 0, kCellAbsent},
                  {kEnsembleDLogits, 0, kCellDeferred},
                  {kAuxLoss, 1, kCellPosInf},
                  {kC51Loss, 1, kCellNegInf}},
                 "slot x fold");
    w.UI_selectFold(0);
    expect_drawn(w.stepPlot(),
                 {{kBatch, 0, kCellClean},
                  {kLogProbs, 0, kCellWarned},
                  {kQExpected, 3, kCellMixed},
                  {kHS1, 4, kCellNaN},
                  {kHS1, 5, kCellClean},
                  {kAdvLogits, 2, kCellDisabled},
                  {kIqnTau, 2, kCellAbsent},
                  {kEnsembleDLogits, 2, kCellDeferred}},
                 "slot x step, fold 0");
    w.UI_selectFold(1);
    expect_drawn(
        w.stepPlot(),
        {{kAuxLoss, 1, kCellPosInf}, {kC51Loss, 2, kCellNegInf}, {kC51Loss, 3, kCellClean}},
        "slot x step, fold 1");
  }

  void theColourKeyIsDrawnInThePalettesColours() {
    MainWindow w(settings("healthy"), every_state_run_);
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* key = w.findChild<QLabel*>("cellColourKey");
    QVERIFY(key && key->isVisible());
    const QImage img = key->grab().toImage();
    for (int code = 0; code < kCellNotRun; ++code) {
      QVERIFY2(key->text().contains(cell_text(code)), qPrintable(cell_text(code)));
      // The swatch of the state: a run of pixels in the palette's colour, at its place in the key.
      bool seen = false;
      for (int y = 0; y < img.height() && !seen; ++y)
        for (int x = 0; x + 3 < img.width() && !seen; ++x)
          seen = QColor(img.pixel(x, y)) == cell_color(code) &&
                 QColor(img.pixel(x + 3, y)) == cell_color(code);
      QVERIFY2(seen, qPrintable("no swatch of " + cell_color(code).name() + " (" + cell_text(code) +
                                ") in the colour key"));
    }
  }
};

NANSCOPE_GUI_TEST("grid_colours", GridColoursTest);
#include "grid_colours_test.moc"
