#include "model/nan_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope::nan_ops;

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
}  // namespace

TEST(NanOps, ReluPassesNaNAndInf) {
  EXPECT_TRUE(std::isnan(relu(kNaN)));
  EXPECT_EQ(relu(kInf), kInf);
  EXPECT_EQ(relu(-kInf), 0.0f);
  EXPECT_EQ(relu(-2.5f), 0.0f);
  EXPECT_EQ(relu(2.5f), 2.5f);
}

TEST(NanOps, ReluBackwardPassesGradientAtNaNInput) {
  EXPECT_EQ(relu_backward(kNaN, 3.0f), 3.0f);  // as PyTorch: NaN <= 0 is false
  EXPECT_EQ(relu_backward(-1.0f, 3.0f), 0.0f);
  EXPECT_EQ(relu_backward(0.0f, 3.0f), 0.0f);
  EXPECT_TRUE(std::isnan(relu_backward(1.0f, kNaN)));
}

TEST(NanOps, ClampKeepsNaN) {
  EXPECT_TRUE(std::isnan(clamp(kNaN, -1.0f, 1.0f)));
  EXPECT_EQ(clamp(kInf, -1.0f, 1.0f), 1.0f);
  EXPECT_EQ(clamp(-kInf, -1.0f, 1.0f), -1.0f);
  EXPECT_EQ(clamp(0.5f, -1.0f, 1.0f), 0.5f);
}

TEST(NanOps, LogsumexpFollowsPyTorch) {
  float nan_row[3] = {1.0f, kNaN, 2.0f};
  EXPECT_TRUE(std::isnan(logsumexp(nan_row, 3)));
  float inf_row[3] = {1.0f, kInf, 2.0f};
  EXPECT_EQ(logsumexp(inf_row, 3), kInf);
  float neg_row[2] = {-kInf, -kInf};
  EXPECT_EQ(logsumexp(neg_row, 2), -kInf);
  double big[2] = {1000.0, 1000.0};
  EXPECT_NEAR(logsumexp(big, 2), 1000.0 + std::log(2.0), 1e-12);  // shifted: no overflow
}

TEST(NanOps, LogSoftmaxPropagatesNaNToTheRow) {
  float row[3] = {0.0f, kNaN, 1.0f}, out[3];
  log_softmax(row, out, 3);
  for (float v : out) EXPECT_TRUE(std::isnan(v));
  double ok[3] = {0.0, 1.0, 2.0}, lo[3];
  log_softmax(ok, lo, 3);
  double s = std::exp(lo[0]) + std::exp(lo[1]) + std::exp(lo[2]);
  EXPECT_NEAR(s, 1.0, 1e-15);
  EXPECT_NEAR(lo[2] - lo[1], 1.0, 1e-15);
}

TEST(NanOps, ArgmaxTiesGoLowAndNaNIsReported) {
  float tie[3] = {1.0f, 3.0f, 3.0f};
  EXPECT_EQ(argmax_or_nan(tie, 3), 1);
  float nan_row[3] = {1.0f, kNaN, 3.0f};
  EXPECT_EQ(argmax_or_nan(nan_row, 3), -1);
  float inf_row[3] = {1.0f, kInf, 3.0f};
  EXPECT_EQ(argmax_or_nan(inf_row, 3), 1);
}

TEST(NanOps, HuberAndItsDerivative) {
  EXPECT_TRUE(std::isnan(huber(kNaN, 1.0f)));
  EXPECT_TRUE(std::isnan(huber_grad(kNaN, 1.0f)));
  EXPECT_EQ(huber(kInf, 1.0f), kInf);
  EXPECT_DOUBLE_EQ(huber(0.5, 1.0), 0.125);
  EXPECT_DOUBLE_EQ(huber(3.0, 1.0), 2.5);
  // Central differences away from the kink at |delta| = kappa.
  for (double x : {-3.0, -0.7, -0.1, 0.2, 0.9, 1.3, 4.0}) {
    const double h = 1e-6;
    const double fd = (huber(x + h, 1.0) - huber(x - h, 1.0)) / (2 * h);
    EXPECT_NEAR(huber_grad(x, 1.0), fd, 1e-8) << "x=" << x;
  }
  EXPECT_DOUBLE_EQ(huber_grad(5.0, 2.0), 2.0);
  EXPECT_DOUBLE_EQ(huber_grad(-5.0, 2.0), -2.0);
}
