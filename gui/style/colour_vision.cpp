#include "style/colour_vision.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace nanscope::gui {

namespace {

using Mat = std::array<std::array<double, 3>, 3>;

// Machado et al. 2009, Table 1, severity 1.0 (linear RGB).
constexpr Mat kDeuteranopia{{{0.367322, 0.860646, -0.227968},
                             {0.280085, 0.672501, 0.047413},
                             {-0.011820, 0.042940, 0.968881}}};
constexpr Mat kProtanopia{{{0.152286, 1.052583, -0.204868},
                           {0.114503, 0.786281, 0.099216},
                           {-0.003882, -0.048116, 1.051998}}};

double to_linear(double c) {
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}
double to_srgb(double c) {
  c = std::clamp(c, 0.0, 1.0);
  return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1 / 2.4) - 0.055;
}

std::array<double, 3> lab_of(const QColor& c) {
  const double r = to_linear(c.redF()), g = to_linear(c.greenF()), b = to_linear(c.blueF());
  const double x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const double y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
  const double z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883;
  auto f = [](double t) {
    return t > 216.0 / 24389 ? std::cbrt(t) : (24389.0 / 27 * t + 16) / 116;
  };
  return {116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
}

double deg(double rad) {
  return rad * 180 / M_PI;
}
double rad(double deg) {
  return deg * M_PI / 180;
}

}  // namespace

QColor simulate(const QColor& c, ColourVision v) {
  if (v == ColourVision::Normal) return c;
  const Mat& m = v == ColourVision::Deuteranopia ? kDeuteranopia : kProtanopia;
  const std::array<double, 3> lin{to_linear(c.redF()), to_linear(c.greenF()), to_linear(c.blueF())};
  std::array<double, 3> out{};
  for (int i = 0; i < 3; ++i)
    out[i] = to_srgb(m[i][0] * lin[0] + m[i][1] * lin[1] + m[i][2] * lin[2]);
  return QColor::fromRgbF(static_cast<float>(out[0]), static_cast<float>(out[1]),
                          static_cast<float>(out[2]), c.alphaF());
}

QImage simulate(const QImage& image, ColourVision v) {
  QImage out = image.convertToFormat(QImage::Format_ARGB32);
  for (int y = 0; y < out.height(); ++y) {
    auto* row = reinterpret_cast<QRgb*>(out.scanLine(y));
    for (int x = 0; x < out.width(); ++x) row[x] = simulate(QColor::fromRgba(row[x]), v).rgba();
  }
  return out;
}

// Sharma, Wu and Dalal (2005), "The CIEDE2000 color-difference formula: implementation notes".
double delta_e2000(const QColor& a, const QColor& b) {
  const auto [L1, a1, b1] = lab_of(a);
  const auto [L2, a2, b2] = lab_of(b);
  const double C1 = std::hypot(a1, b1), C2 = std::hypot(a2, b2), Cb = (C1 + C2) / 2;
  const double G = 0.5 * (1 - std::sqrt(std::pow(Cb, 7) / (std::pow(Cb, 7) + std::pow(25.0, 7))));
  const double a1p = (1 + G) * a1, a2p = (1 + G) * a2;
  const double C1p = std::hypot(a1p, b1), C2p = std::hypot(a2p, b2);
  auto hue = [](double y, double x) {
    return x == 0 && y == 0 ? 0.0 : std::fmod(deg(std::atan2(y, x)) + 360, 360);
  };
  const double h1 = hue(b1, a1p), h2 = hue(b2, a2p);
  const double dL = L2 - L1, dC = C2p - C1p;
  double dh = 0;
  if (C1p * C2p != 0) {
    dh = h2 - h1;
    if (dh > 180)
      dh -= 360;
    else if (dh < -180)
      dh += 360;
  }
  const double dH = 2 * std::sqrt(C1p * C2p) * std::sin(rad(dh / 2));
  const double Lb = (L1 + L2) / 2, Cbp = (C1p + C2p) / 2;
  double hb = h1 + h2;
  if (C1p * C2p != 0)
    hb = std::abs(h1 - h2) <= 180 ? (h1 + h2) / 2
                                  : (h1 + h2 < 360 ? (h1 + h2 + 360) / 2 : (h1 + h2 - 360) / 2);
  const double T = 1 - 0.17 * std::cos(rad(hb - 30)) + 0.24 * std::cos(rad(2 * hb)) +
                   0.32 * std::cos(rad(3 * hb + 6)) - 0.20 * std::cos(rad(4 * hb - 63));
  const double dtheta = 30 * std::exp(-std::pow((hb - 275) / 25, 2));
  const double RC = 2 * std::sqrt(std::pow(Cbp, 7) / (std::pow(Cbp, 7) + std::pow(25.0, 7)));
  const double SL = 1 + 0.015 * std::pow(Lb - 50, 2) / std::sqrt(20 + std::pow(Lb - 50, 2));
  const double SC = 1 + 0.045 * Cbp, SH = 1 + 0.015 * Cbp * T;
  const double RT = -std::sin(rad(2 * dtheta)) * RC;
  return std::sqrt(std::pow(dL / SL, 2) + std::pow(dC / SC, 2) + std::pow(dH / SH, 2) +
                   RT * (dC / SC) * (dH / SH));
}

}  // namespace nanscope::gui
