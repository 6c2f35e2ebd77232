// The grid palette stays readable with red-green colour vision deficiency: every pair of cell
// colours keeps a CIEDE2000 difference of at least kMinDifference for normal vision and under the
// Machado et al. (2009) simulations of deuteranopia and protanopia (severity 1.0). And the tools
// the test relies on are checked against known values first.
#include <QtTest>

#include "gui/gui_test_registry.h"
#include "style/cell_palette.h"
#include "style/colour_vision.h"

using namespace nanscope::gui;

namespace {
// A difference of 10 or more reads as a different colour at a glance; the palette keeps 12.
constexpr double kMinDifference = 12.0;
}  // namespace

class PaletteTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void theColourDifferenceIsCiede2000() {
    QCOMPARE(delta_e2000(Qt::white, Qt::white), 0.0);
    QVERIFY(std::abs(delta_e2000(Qt::white, Qt::black) - 100.0) < 1e-3);  // L* 100 vs 0
    // Sharma et al.'s pairs are in Lab; an sRGB pair with a published value: #FF0000 vs #00FF00.
    QVERIFY(std::abs(delta_e2000(QColor(255, 0, 0), QColor(0, 255, 0)) - 86.61) < 0.05);
  }

  void theSimulationsKeepGreysAndMergeRedAndGreen() {
    for (auto v : {ColourVision::Deuteranopia, ColourVision::Protanopia}) {
      const QColor g = simulate(QColor(128, 128, 128), v);
      QVERIFY(std::abs(g.red() - 128) <= 1 && std::abs(g.green() - 128) <= 1 &&
              std::abs(g.blue() - 128) <= 1);
      // The classic confusion: a red and a green of the old palette become nearly one colour.
      QVERIFY(delta_e2000(simulate(QColor(211, 47, 47), v), simulate(QColor(76, 175, 80), v)) <
              delta_e2000(QColor(211, 47, 47), QColor(76, 175, 80)) / 2);
    }
  }

  void everyPairOfCellColoursStaysApart() {
    for (auto v : {ColourVision::Normal, ColourVision::Deuteranopia, ColourVision::Protanopia})
      for (int a = 0; a < kCellCodeCount; ++a)
        for (int b = a + 1; b < kCellCodeCount; ++b) {
          const double d = delta_e2000(simulate(cell_color(a), v), simulate(cell_color(b), v));
          QVERIFY2(d >= kMinDifference, qPrintable(QString("codes %1 and %2, vision %3: %4")
                                                       .arg(a)
                                                       .arg(b)
                                                       .arg(static_cast<int>(v))
                                                       .arg(d)));
        }
  }

  void everyKindHasItsGlyphAndReadableInk() {
    QStringList glyphs;
    for (int c : {kCellNaN, kCellPosInf, kCellNegInf, kCellMixed}) {
      QVERIFY(!cell_glyph(c).isEmpty());
      glyphs << cell_glyph(c);
      QVERIFY(delta_e2000(cell_ink(c), cell_color(c)) > 40);
    }
    QCOMPARE(QSet<QString>(glyphs.begin(), glyphs.end()).size(), 4);
    QVERIFY(cell_glyph(kCellClean).isEmpty());
  }
};

NANSCOPE_GUI_TEST("palette", PaletteTest);
#include "palette_test.moc"
