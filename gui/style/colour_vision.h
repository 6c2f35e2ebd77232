// Colour vision deficiency simulation (Machado, Oliveira and Fernandes 2009, severity 1.0, applied
// in linear RGB) and the CIEDE2000 colour difference. The palette test holds the grid colours to a
// minimum difference under both simulations; `nanscope --screenshot-simulate` renders the window as
// a deuteranope or protanope sees it.
#pragma once

#include <QColor>
#include <QImage>

#include "core/enum_names.h"

namespace nanscope::gui {

enum class ColourVision { Normal, Deuteranopia, Protanopia };
}  // namespace nanscope::gui
namespace nanscope {
template <>
struct EnumNames<gui::ColourVision> {  // as --screenshot-simulate spells them
  static constexpr std::array<std::string_view, 3> kNames = {"normal", "deuteranopia",
                                                             "protanopia"};
};
}  // namespace nanscope
namespace nanscope::gui {

QColor simulate(const QColor& c, ColourVision v);
QImage simulate(const QImage& image, ColourVision v);
// CIEDE2000 difference of two sRGB colours (D65).
double delta_e2000(const QColor& a, const QColor& b);

}  // namespace nanscope::gui
