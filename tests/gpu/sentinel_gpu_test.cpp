// GPU tests of the device-side sentinel check (label gpu; exit 77 = skipped without a device).
// Every result is compared with the CPU reference check (engine/core/sentinel), the buffers are
// compared byte for byte before and after, and different launch configurations must agree bit for
// bit.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "core/sentinel.h"
#include "dense.h"
#include "reference/reference_check.h"
#include "sentinel_check.h"

using namespace nanscope;
using nanscope::cuda::DeviceBank;

// The two-pass reference check (cuda/reference), the simple path the fused check is held to.
void reference_check(DeviceBank& bank, int slot, const float* data, std::size_t n, int blocks = 0) {
  static nanscope::cuda::ReferenceCheck check;
  check(bank, slot, data, n, blocks);
}

namespace {

struct DeviceBuffer {
  float* p = nullptr;
  std::size_t n = 0;
  explicit DeviceBuffer(const std::vector<float>& h) : n(h.size()) {
    cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(float) + 64);
    if (n) cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(p); }
  std::vector<float> host() const {
    std::vector<float> h(n);
    if (n) cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost);
    return h;
  }
};

std::vector<float> random_buffer(std::size_t n, int bad, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  for (int k = 0; k < bad && n > 0; ++k) v[rng() % n] = specials[rng() % 3];
  return v;
}

}  // namespace

TEST(DeviceSentinel, MatchesTheCpuCheckAndNeverWrites) {
  std::mt19937 rng(7);
  DeviceBank bank(4);
  const std::size_t sizes[] = {0, 1, 3, 1023, 4096 + 5, (1u << 20) + 7, 3u << 22};
  int slot = 0;
  std::vector<ScanResult> expected;
  bank.begin_step(0);
  for (std::size_t n : sizes) {
    for (int bad : {0, 1, 17}) {
      auto h = random_buffer(n, bad, rng);
      DeviceBuffer d(h);
      reference_check(bank, slot, d.p, n);
      expected.push_back(scan_nonfinite(h.data(), n));
      auto after = d.host();
      ASSERT_EQ(std::memcmp(after.data(), h.data(), n * sizeof(float)), 0)
          << "the check wrote its buffer";
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ++slot;
    }
  }
  auto r = bank.readback();
  for (int s = 0; s < slot; ++s) {
    const auto& rec = r.records[s];
    EXPECT_EQ(rec.kinds, expected[s].kinds) << "slot " << s;
    EXPECT_EQ(rec.first_step, expected[s].kinds ? 0 : -1);
    EXPECT_EQ(rec.count, expected[s].kinds ? expected[s].count : 0);
    EXPECT_EQ(r.kinds(0, s), expected[s].kinds);
    if (expected[s].kinds) {
      EXPECT_EQ(rec.exec_position, s);
    }
  }
}

TEST(DeviceSentinel, AnyLaunchConfigurationGivesTheSameFlags) {
  std::mt19937 rng(11);
  auto h = random_buffer((1u << 22) + 3, 40, rng);
  DeviceBuffer d(h);
  std::vector<cuda::DeviceSlotRecord> seen;
  for (int blocks : {1, 7, 132, 1024}) {
    DeviceBank bank(1);
    bank.begin_step(0);
    reference_check(bank, 5, d.p, d.n, blocks);
    seen.push_back(bank.readback().records[5]);
  }
  for (const auto& r : seen) {
    EXPECT_EQ(r.kinds, seen[0].kinds);
    EXPECT_EQ(r.count, seen[0].count);
  }
  EXPECT_EQ(seen[0].count, scan_nonfinite(h.data(), h.size()).count);
  // Misaligned start (the float4 path falls back): the same answer for the shifted view.
  DeviceBank bank(1);
  bank.begin_step(0);
  reference_check(bank, 6, d.p + 1, d.n - 1);
  EXPECT_EQ(bank.readback().records[6].count, scan_nonfinite(h.data() + 1, h.size() - 1).count);
}

TEST(DeviceSentinel, StickyWithinAFoldResetAtTheBoundaryHistoryPerStep) {
  std::vector<float> clean(1000, 1.0f), bad = clean;
  bad[10] = std::numeric_limits<float>::quiet_NaN();
  DeviceBuffer c(clean), b(bad);
  DeviceBank bank(3);
  bank.begin_step(0);
  reference_check(bank, 2, c.p, c.n);
  bank.begin_step(1);
  reference_check(bank, 2, b.p, b.n);
  auto mid = bank.readback();
  EXPECT_EQ(mid.step_status, 1u);  // this step fired
  bank.begin_step(2);
  reference_check(bank, 2, c.p, c.n);
  auto r = bank.readback();
  EXPECT_EQ(r.step_status, 0u);       // the status word is per step
  EXPECT_EQ(r.records[2].kinds, 1u);  // sticky
  EXPECT_EQ(r.records[2].first_step, 1);
  EXPECT_EQ(r.records[2].count, 1);
  EXPECT_EQ(r.kinds(0, 2), 0);
  EXPECT_EQ(r.kinds(1, 2), 1);
  EXPECT_EQ(r.kinds(2, 2), 0);
  bank.reset_fold();
  bank.begin_step(0);
  auto cleared = bank.readback();
  EXPECT_EQ(cleared.records[2].kinds, 0u);
  EXPECT_EQ(cleared.records[2].first_step, -1);
}

// The fused check (one launch for many slots) against the simple one (one check per slot) on random
// buffers: planted NaN, +Inf and -Inf at random positions and always in the last element of some,
// lengths that are not multiples of the vector width, misaligned views, several steps.
TEST(DeviceSentinel, FusedGroupCheckGivesTheSimpleChecksRecords) {
  std::mt19937 rng(11);
  const std::size_t sizes[] = {0, 1, 3, 5, 1023, 4097, 65537, 262145, 1u << 20, (1u << 22) + 3};
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<DeviceBank::GroupItem> items;
  for (int slot = 0; slot < 30; ++slot) {
    const std::size_t n =
        sizes[static_cast<std::size_t>(slot) % 10] + static_cast<std::size_t>(slot / 10);
    const int bad = slot % 3 == 0 ? 0 : static_cast<int>(rng() % 4);
    std::vector<float> h = random_buffer(n, bad, rng);
    if (n > 0 && slot % 5 == 1)
      h.back() = slot % 2 ? -std::numeric_limits<float>::infinity() : std::nanf("");
    bufs.push_back(std::make_unique<DeviceBuffer>(h));
    const std::size_t offset = slot % 4 == 3 && n > 1 ? 1 : 0;  // a misaligned view
    items.push_back({slot, bufs.back()->p + offset, n - offset});
  }
  DeviceBank simple(4), fused(4);
  for (int step = 0; step < 3; ++step) {
    simple.begin_step(step);
    fused.begin_step(step);
    // Each step checks a different subset, so first steps differ between slots.
    std::vector<DeviceBank::GroupItem> due;
    for (const auto& it : items)
      if ((it.slot + step) % 3 != 0) due.push_back(it);
    for (const auto& it : due)
      reference_check(simple, it.slot, static_cast<const float*>(it.data), it.count);
    fused.check_group(due);
  }
  const auto a = simple.readback(), b = fused.readback();
  ASSERT_EQ(a.rows(), b.rows());
  for (std::size_t st = 0; st < a.rows(); ++st)
    for (int s = 0; s < a.slots; ++s) EXPECT_EQ(a.kinds(st, s), b.kinds(st, s)) << "step " << st;
  EXPECT_EQ(a.step_status, b.step_status);
  int fired = 0;
  for (int s = 0; s < 30; ++s) {
    EXPECT_EQ(a.records[s].kinds, b.records[s].kinds) << s;
    EXPECT_EQ(a.records[s].first_step, b.records[s].first_step) << s;
    EXPECT_EQ(a.records[s].count, b.records[s].count) << s;
    EXPECT_EQ(a.records[s].exec_position, b.records[s].exec_position) << s;
    fired += a.records[s].kinds != 0;
    // And against the CPU check of the same values.
    const auto h = bufs[static_cast<std::size_t>(s)]->host();
    const std::size_t offset = s % 4 == 3 && h.size() > 1 ? 1 : 0;
    const ScanResult r = scan_nonfinite(h.data() + offset, h.size() - offset);
    EXPECT_EQ(b.records[s].kinds, r.kinds) << s;
    if (r.kinds) {
      EXPECT_EQ(b.records[s].count, r.count) << s;
    }
  }
  EXPECT_GT(fired, 10);  // the planted values were there to find
}

// A producer that checks what it writes (the bias-and-relu that makes iqn_phi, here with a zero
// bias) leaves the records the fused check of its output would: kinds, first step, count at the
// first fire, history, status and first-fire words, over lengths that leave part of the last warp
// idle. Its capture copy, made after it at the first fire, holds the output of that step and not a
// later one.
TEST(DeviceSentinel, AProducersOwnCheckGivesTheFusedChecksRecords) {
  std::mt19937 rng(23);
  const std::size_t sizes[] = {1, 33, 1023, 4097, 65537, (1u << 20) + 5};
  std::vector<std::unique_ptr<DeviceBuffer>> in, out_checked, out_plain, area;
  const DeviceBuffer zero_bias(std::vector<float>(1, 0.f));  // one column: x + 0 keeps every value
  for (std::size_t n : sizes) {
    in.push_back(std::make_unique<DeviceBuffer>(std::vector<float>(n)));
    out_checked.push_back(std::make_unique<DeviceBuffer>(std::vector<float>(n)));
    out_plain.push_back(std::make_unique<DeviceBuffer>(std::vector<float>(n)));
    area.push_back(std::make_unique<DeviceBuffer>(std::vector<float>(n)));
  }
  DeviceBank fused(3), producer(3);
  std::vector<std::vector<float>> first_fire_output(std::size(sizes));
  for (int step = 0; step < 3; ++step) {
    fused.begin_step(step);
    producer.begin_step(step);
    std::vector<DeviceBank::GroupItem> checks, copies;
    for (std::size_t k = 0; k < std::size(sizes); ++k) {
      const int slot = static_cast<int>(k) + 1;
      // Clean at step 0 for half the slots; planted NaN/Inf (-Inf becomes 0 in the relu) later.
      const int bad = step == 0 && k % 2 == 0 ? 0 : static_cast<int>(rng() % 5);
      std::vector<float> h = random_buffer(sizes[k], bad, rng);
      if (step == 1 && k == 3) h.back() = std::numeric_limits<float>::infinity();
      if (step == 2) h[h.size() / 2] = std::nanf("");  // every slot fires by the last step
      cudaMemcpy(in[k]->p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
      const int rows = static_cast<int>(sizes[k]);
      cuda::bias_relu(in[k]->p, zero_bias.p, rows, 1, out_plain[k]->p, nullptr);
      cuda::bias_relu(in[k]->p, zero_bias.p, rows, 1, out_checked[k]->p, nullptr,
                      producer.sink(slot));
      checks.push_back({slot, out_plain[k]->p, sizes[k]});
      copies.push_back({slot, out_checked[k]->p, sizes[k], area[k]->p});
    }
    fused.check_group(checks);
    producer.copy_first_fires(copies);
    const auto now = producer.readback_step();
    for (std::size_t k = 0; k < std::size(sizes); ++k)
      if (now.records[k + 1].first_step == step) first_fire_output[k] = out_checked[k]->host();
  }
  const auto a = fused.readback(), b = producer.readback();
  ASSERT_EQ(a.rows(), b.rows());
  for (std::size_t st = 0; st < a.rows(); ++st)
    for (int s = 0; s < a.slots; ++s) EXPECT_EQ(a.kinds(st, s), b.kinds(st, s)) << "step " << st;
  EXPECT_EQ(a.step_status, b.step_status);
  int fired_later = 0;
  for (std::size_t k = 0; k < std::size(sizes); ++k) {
    const int s = static_cast<int>(k) + 1;
    const auto checked_out = out_checked[k]->host(), plain_out = out_plain[k]->host();
    EXPECT_EQ(std::memcmp(checked_out.data(), plain_out.data(), checked_out.size() * sizeof(float)),
              0)
        << s;
    EXPECT_EQ(a.records[s].kinds, b.records[s].kinds) << s;
    EXPECT_EQ(a.records[s].first_step, b.records[s].first_step) << s;
    EXPECT_EQ(a.records[s].count, b.records[s].count) << s;
    EXPECT_EQ(a.records[s].exec_position, b.records[s].exec_position) << s;
    ASSERT_GE(b.records[s].first_step, 0) << s;
    fired_later += b.records[s].first_step > 0;
    // The capture area: the first fire's output, bit for bit.
    const auto got = area[k]->host();
    EXPECT_EQ(std::memcmp(got.data(), first_fire_output[k].data(), got.size() * sizeof(float)), 0)
        << s;
  }
  EXPECT_GE(fired_later,
            2);  // first fires after step 0 too: the copy is the first fire's, not step 0's
}
