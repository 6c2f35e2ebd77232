// Invariants of the trainer's maths on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>

#include "model/nan_ops.h"
#include "model_fixture.h"

using namespace nanscope;

TEST(C51Projection, NonNegativeSumsToOneAndKeepsTheMean) {
  test::LoadedModel<> t;
  auto& m = t.m;
  const auto& d = m.d;
  auto proj = m.slot_mat(kProjTarget, d.B, d.D * d.NA);
  auto r = m.batch_ret();
  auto done = m.batch_done();
  int unclipped = 0;
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br) {
      double sum = 0, mean = 0;
      for (int i = 0; i < d.NA; ++i) {
        EXPECT_GE(proj(b, br * d.NA + i), 0.0);
        sum += proj(b, br * d.NA + i);
        mean += d.zeta(i) * proj(b, br * d.NA + i);
      }
      EXPECT_NEAR(sum, 1.0, 1e-12);
      const double disc = d.gamma_n * (1 - done(b, 0));
      if (std::abs(r(b, 0)) + disc * d.v_max <= d.v_max) {  // no Tz_j is clipped
        EXPECT_NEAR(mean, m.y(b, br), 1e-10);
        ++unclipped;
      }
    }
  EXPECT_GT(unclipped, 0);
}

TEST(C51Projection, ExactAtomLandingKeepsAllMass) {
  test::LoadedModel<> t;
  auto& m = t.m;
  const auto& d = m.d;
  // R = 0 with done = 1 puts every Tz_j exactly on the atom zeta = 0 (odd atoms, symmetric
  // support): the floor/ceil form loses this mass, the triangular-kernel form must not.
  ASSERT_EQ(d.NA % 2, 1);
  m.batch_ret().setZero();
  m.batch_done().setOnes();
  m.stage_c51_targets();
  auto proj = m.slot_mat(kProjTarget, d.B, d.D * d.NA);
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br)
      for (int i = 0; i < d.NA; ++i)
        EXPECT_DOUBLE_EQ(proj(b, br * d.NA + i), i == d.NA / 2 ? 1.0 : 0.0);
  // R beyond v_max with done = 1 clips all mass onto the last atom.
  m.batch_ret().setConstant(1e3);
  m.stage_c51_targets();
  for (int br = 0; br < d.D; ++br) EXPECT_DOUBLE_EQ(proj(0, br * d.NA + d.NA - 1), 1.0);
}

TEST(DuelingAggregation, PerBranchLogSoftmaxAndAdvantageShiftInvariance) {
  test::LoadedModel<> t;
  auto& m = t.m;
  const auto& d = m.d;
  auto v = m.slot_mat(kValueLogits, d.B, d.NA);
  auto adv = m.slot_mat(kAdvLogits, d.B, d.A * d.NA);
  auto logp = m.slot_mat(kLogProbs, d.B, d.A * d.NA);
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br)
      for (int a = 0; a < d.sub[br]; ++a) {
        std::vector<double> l(d.NA), expect(d.NA);
        for (int i = 0; i < d.NA; ++i) {
          double mean = 0;
          for (int k = 0; k < d.sub[br]; ++k) mean += adv(b, (d.off[br] + k) * d.NA + i);
          l[i] = v(b, i) + adv(b, (d.off[br] + a) * d.NA + i) - mean / d.sub[br];
        }
        double mx = *std::max_element(l.begin(), l.end()), s = 0;
        for (double x : l) s += std::exp(x - mx);
        for (int i = 0; i < d.NA; ++i)
          EXPECT_NEAR(logp(b, (d.off[br] + a) * d.NA + i), l[i] - mx - std::log(s), 1e-12);
      }
  // Adding a constant per (branch, atom) to all of a branch's advantages changes nothing.
  std::vector<double> before(m.slots[kLogProbs]);
  for (int b = 0; b < d.B; ++b)
    for (int i = 0; i < d.NA; ++i)
      for (int a = 0; a < d.sub[1]; ++a) adv(b, (d.off[1] + a) * d.NA + i) += 0.37 * (i + 1);
  m.stage_aggregate();
  for (std::size_t k = 0; k < before.size(); ++k)
    EXPECT_NEAR(m.slots[kLogProbs][k], before[k], 1e-12);
}

TEST(Cql, GradientIsAlphaTimesSoftmaxMinusOnehotOverB) {
  test::LoadedModel<> t;
  t.backward();
  auto& m = t.m;
  const auto& d = m.d;
  auto q = m.slot_mat(kQExpected, d.B, d.A);
  const double alpha = t.cfg.loss.alpha_cql;
  for (int b = 0; b < d.B; ++b)
    for (int br = 0; br < d.D; ++br) {
      double z = 0;
      for (int a = 0; a < d.sub[br]; ++a) z += std::exp(q(b, d.off[br] + a));
      for (int a = 0; a < d.sub[br]; ++a) {
        const int col = d.off[br] + a;
        const double onehot = a == m.actions[b * d.D + br] ? 1.0 : 0.0;
        const double dq = alpha * (std::exp(q(b, col)) / z - onehot) / d.B;
        for (int i = 0; i < d.NA; ++i)  // dQ/dl_i = p_i (zeta_i - Q)
          EXPECT_NEAR(m.g_cql(b, col * d.NA + i),
                      dq * m.probs(b, col * d.NA + i) * (d.zeta(i) - q(b, col)), 1e-15);
      }
    }
}

TEST(QuantileHuber, LossMatchesTheSpecFormulaPerSample) {
  test::LoadedModel<> t;
  auto& m = t.m;
  const auto& d = m.d;
  auto q = m.slot_mat(kIqnQuantiles, d.B * d.N, d.A);
  auto tau = m.slot_mat(kIqnTau, d.B, d.N);
  for (int b = 0; b < d.B; ++b) {
    double per = 0;
    for (int br = 0; br < d.D; ++br) {
      const int a = d.off[br] + m.actions[b * d.D + br];
      for (int i = 0; i < d.N; ++i) {
        double mean_j = 0;
        for (int j = 0; j < d.Np; ++j) {
          const double delta = m.iqn_targets(b, br * d.Np + j) - q(b * d.N + i, a);
          const double l = std::abs(delta) <= d.kappa ? 0.5 * delta * delta
                                                      : d.kappa * (std::abs(delta) - 0.5 * d.kappa);
          mean_j += std::abs(tau(b, i) - (delta < 0 ? 1.0 : 0.0)) * l / d.kappa;
        }
        per += mean_j / d.Np;
      }
    }
    EXPECT_NEAR(m.slots[kIqnLoss][b], per / d.D, 1e-12);
  }
}

TEST(Adam, MatchesAHandComputedStep) {
  Config cfg = test::tiny_config();
  cfg.optim.max_grad_norm = 0;
  cfg.optim.lr = 0.01;
  cfg.optim.lr_mult[6] = 3.0;  // aux group
  CpuModel<double> m(cfg);
  const ParamEntry& w = m.layout[kAuxW2];
  const ParamEntry& enc = m.layout[kEncB1];
  std::fill(m.grads.begin(), m.grads.end(), 0.0);
  m.grads[w.offset] = 0.5;
  m.grads[enc.offset] = -2.0;
  const double p0 = m.params[w.offset], e0 = m.params[enc.offset];
  m.optimizer(StepKey{});
  // t = 1: m = 0.1 g, v = 0.001 g^2, mhat = g, vhat = g^2 -> step = lr * sign(g) (up to eps).
  EXPECT_NEAR(m.params[w.offset], p0 - 0.03 * 0.5 / (0.5 + 1e-8), 1e-15);
  EXPECT_NEAR(m.params[enc.offset], e0 + 0.01 * 2.0 / (2.0 + 1e-8), 1e-15);
  EXPECT_NEAR(m.adam[w.offset], 0.05, 1e-15);
  EXPECT_NEAR(m.adam[m.layout.total() + w.offset], 0.001 * 0.25, 1e-15);
  // t = 2 with g = -1: m = 0.9*0.05 - 0.1 = -0.055, v = 0.999*0.00025 + 0.001.
  m.grads[w.offset] = -1.0;
  m.grads[enc.offset] = 0.0;
  const double p1 = m.params[w.offset];
  m.optimizer(StepKey{});
  const double mm = -0.055, vv = 0.999 * 0.00025 + 0.001;
  const double mhat = mm / (1 - 0.9 * 0.9), vhat = vv / (1 - 0.999 * 0.999);
  EXPECT_NEAR(m.params[w.offset], p1 - 0.03 * mhat / (std::sqrt(vhat) + 1e-8), 1e-14);
  EXPECT_EQ(m.adam_t, 2);
  EXPECT_EQ(m.slots[kGradNorm][0], 1.0);  // global norm of the second gradient
}

TEST(GradClip, ScalesToTheMaxNormAndANaNNormPoisonsTheUpdate) {
  Config cfg = test::tiny_config();
  cfg.optim.max_grad_norm = 1.0;
  CpuModel<double> m(cfg);
  std::fill(m.grads.begin(), m.grads.end(), 0.0);
  m.grads[m.layout[kValB].offset] = 3.0;
  m.grads[m.layout[kValB].offset + 1] = 4.0;  // norm 5 -> scale 0.2
  m.optimizer(StepKey{});
  EXPECT_DOUBLE_EQ(m.slots[kGradNorm][0], 5.0);
  EXPECT_NEAR(m.adam[m.layout[kValB].offset], 0.1 * 0.6, 1e-15);  // m = (1 - beta1) * clipped g
  // A NaN norm must give a NaN scale, never a scale of 1.
  m.grads[m.layout[kValB].offset] = std::numeric_limits<double>::quiet_NaN();
  m.optimizer(StepKey{});
  EXPECT_TRUE(std::isnan(m.slots[kGradNorm][0]));
  EXPECT_TRUE(std::isnan(m.params[m.layout[kEncW1].offset]));  // every parameter is poisoned
}

TEST(NanTravel, ABadBatchRowPoisonsItsOwnRowsOnly) {
  test::LoadedModel<float> t(test::tiny_config(Precision::Float32));
  auto& m = t.m;
  const auto& d = m.d;
  m.batch_s()(2, 5) = std::numeric_limits<float>::quiet_NaN();
  m.forward();
  auto h1 = m.slot_mat(kHS1, d.B, d.H);
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.H; ++h) EXPECT_EQ(std::isnan(h1(b, h)), b == 2) << b << "," << h;
  // Through relu, the trunk, the heads and log_softmax: the whole row is NaN, nothing else is.
  auto logp = m.slot_mat(kLogProbs, d.B, d.A * d.NA);
  for (int b = 0; b < d.B; ++b) EXPECT_EQ(std::isnan(logp(b, 0)), b == 2);
  EXPECT_TRUE(std::isnan(m.slots[kC51Loss][2]));
  EXPECT_FALSE(std::isnan(m.slots[kC51Loss][1]));
  EXPECT_TRUE(std::isnan(m.slots[kTotalLoss][0]));
  EXPECT_TRUE(std::isnan(m.slots[kIqnQuantiles][2 * d.N * d.A]));
  EXPECT_TRUE(std::isnan(m.slots[kAuxPredNb][2 * d.AO]));
}

TEST(NanTravel, ANaNGreedyRowMakesThatTargetNaN) {
  test::LoadedModel<> t;
  auto& m = t.m;
  const auto& d = m.d;
  m.batch_s_next()(1, 0) = std::numeric_limits<double>::quiet_NaN();
  m.stage_c51_targets();
  for (int br = 0; br < d.D; ++br) {
    EXPECT_EQ(m.astar[1 * d.D + br], -1);
    EXPECT_TRUE(std::isnan(m.slots[kProjTarget][(1 * d.D + br) * d.NA]));
    EXPECT_TRUE(std::isnan(m.y(1, br)));
    EXPECT_GE(m.astar[0 * d.D + br], 0);
  }
  m.stage_iqn_targets();
  EXPECT_TRUE(std::isnan(m.iqn_targets(1, 0)));
  EXPECT_FALSE(std::isnan(m.iqn_targets(0, 0)));
}

TEST(NanTravel, InfiniteLogitsFollowIeee) {
  test::LoadedModel<float> t(test::tiny_config(Precision::Float32));
  auto& m = t.m;
  m.slots[kValueLogits][3] = std::numeric_limits<float>::infinity();
  m.stage_aggregate();
  // +Inf in a row: logsumexp is +Inf, so the row's log-probs are NaN (Inf - Inf) or -Inf.
  EXPECT_TRUE(std::isnan(m.slots[kLogProbs][3]));
  EXPECT_EQ(m.slots[kLogProbs][0], -std::numeric_limits<float>::infinity());
}
