// GPU tests of a device bank of any width (label gpu; exit 77 = skipped without a device): every
// slot of a wide table checked in one fused launch at history rows that are not word multiples,
// held to the CPU check of the same values; the first-fire copies in the bank's arena, bit for bit,
// and none once it is spent; the launch tables made once per list, kept for a graph that holds
// them (made outside its capture) while eager lists are recycled around them.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/sentinel.h"
#include "sentinel_check.h"

using namespace nanscope;
using nanscope::cuda::BankShape;
using nanscope::cuda::DeviceBank;

namespace {

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

// One device pool of `slots` buffers of varied lengths, some starting off a 16-byte boundary.
struct Pool {
  std::vector<std::size_t> start, count;
  std::vector<float> host;
  float* device = nullptr;
  Pool(int slots, std::mt19937& rng) {
    std::size_t at = 0;
    for (int k = 0; k < slots; ++k) {
      at += k % 5 == 4 ? 1 : 0;  // a misaligned view now and then
      start.push_back(at);
      count.push_back(1 + (static_cast<std::size_t>(k) * 37) % 700);
      at += count.back();
    }
    host.resize(at + 4);
    std::normal_distribution<float> normal;
    for (float& x : host) x = normal(rng);
    cudaMalloc(&device, host.size() * sizeof(float));
    upload();
  }
  ~Pool() { cudaFree(device); }
  void upload() {  // landed before any stream's next check (a pageable copy may return earlier)
    cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
  }
  float* at(int slot) { return device + start[static_cast<std::size_t>(slot)]; }
  const float* host_at(int slot) const {
    return host.data() + start[static_cast<std::size_t>(slot)];
  }
  std::vector<DeviceBank::GroupItem> items() {
    std::vector<DeviceBank::GroupItem> out;
    for (int k = 0; k < static_cast<int>(start.size()); ++k)
      out.push_back({k, at(k), count[static_cast<std::size_t>(k)]});
    return out;
  }
};

}  // namespace

TEST(WideBank, EverySlotOfAWideTableInOneLaunchMatchesTheCpuCheckAtEveryRow) {
  for (const int slots : {37, 1001, 4096}) {
    SCOPED_TRACE(std::to_string(slots) + " slots");
    std::mt19937 rng(static_cast<unsigned>(slots));
    Pool pool(slots, rng);
    constexpr int kSteps = 7;
    // Room for about half the fired slots' copies: the first ones get theirs, later ones none.
    DeviceBank bank(BankShape{slots, kSteps, false, 2000}, nullptr);
    std::vector<int> first_step(static_cast<std::size_t>(slots), -1);
    std::vector<std::uint8_t> sticky(static_cast<std::size_t>(slots), 0);
    std::vector<std::vector<std::uint8_t>> rows;
    std::vector<std::vector<float>> first_values(static_cast<std::size_t>(slots));
    std::vector<std::int64_t> first_count(static_cast<std::size_t>(slots), 0);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
    for (int step = 0; step < kSteps; ++step) {
      bank.begin_step(step);
      // A few slots (the last one among them) get non-finite values at this step.
      for (int k : {static_cast<int>(rng() % slots), static_cast<int>(rng() % slots), slots - 1})
        if (step == 2 || k != slots - 1)
          pool.host[pool.start[static_cast<std::size_t>(k)] +
                    rng() % pool.count[static_cast<std::size_t>(k)]] = specials[rng() % 3];
      pool.upload();
      bank.check_group(pool.items());
      std::vector<std::uint8_t> row(static_cast<std::size_t>(slots));
      for (int k = 0; k < slots; ++k) {
        const auto i = static_cast<std::size_t>(k);
        const ScanResult r = scan_nonfinite(pool.host_at(k), pool.count[i]);
        row[i] = static_cast<std::uint8_t>(r.kinds);
        sticky[i] |= static_cast<std::uint8_t>(r.kinds);
        if (r.kinds && first_step[i] < 0) {
          first_step[i] = step;
          first_count[i] = r.count;
          first_values[i].assign(pool.host_at(k), pool.host_at(k) + pool.count[i]);
        }
      }
      rows.push_back(row);
      // Healed again for the next step, as a trainer's buffers are rewritten.
      for (float& x : pool.host)
        if (!std::isfinite(x)) x = 0.25f;
    }
    const auto r = bank.readback();
    ASSERT_EQ(r.slots, slots);
    ASSERT_EQ(r.rows(), static_cast<std::size_t>(kSteps));
    int fired = 0, copied = 0;
    for (int k = 0; k < slots; ++k) {
      const auto i = static_cast<std::size_t>(k);
      EXPECT_EQ(r.records[i].kinds, sticky[i]) << "slot " << k;
      EXPECT_EQ(r.records[i].first_step, first_step[i]) << "slot " << k;
      if (first_step[i] >= 0) {
        ++fired;
        EXPECT_EQ(r.records[i].count, first_count[i]) << "slot " << k;
      }
      for (int step = 0; step < kSteps; ++step)
        EXPECT_EQ(r.kinds(static_cast<std::size_t>(step), k),
                  rows[static_cast<std::size_t>(step)][i])
            << "slot " << k << " step " << step;
      const std::vector<float> got = bank.captured(k, pool.count[i]);
      if (got.empty()) continue;
      ++copied;
      ASSERT_GE(first_step[i], 0) << "a copy of a slot that never fired: " << k;
      EXPECT_EQ(std::memcmp(got.data(), first_values[i].data(), got.size() * sizeof(float)), 0)
          << "slot " << k << "'s copy is not its buffer at its first fire";
    }
    EXPECT_GE(fired, 6);
    EXPECT_EQ(bank.tables_uploaded(), 1u) << "every step checks the same list";
    EXPECT_GT(copied, 0) << "the arena took the first fires' copies";
    EXPECT_LT(copied, fired) << "and no more than fit in 2,000 floats";
    EXPECT_EQ(r.records[static_cast<std::size_t>(slots - 1)].first_step, 2);
  }
}

TEST(WideBank, ALaunchTableIsMadeOncePerListAndAGraphsTableOutlivesTheRecycling) {
  std::mt19937 rng(3);
  Pool pool(64, rng);
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBank bank(BankShape{64, 4, false, 0}, s);
  auto items = pool.items();
  bank.begin_step(0);
  bank.check_group(items);
  bank.check_group(items);  // later in the step: its positions follow the first's, same table
  EXPECT_EQ(bank.tables_uploaded(), 1u) << "the same list met again finds its table";
  // A list first met inside a capture: its table is made then, outside the graph (which holds no
  // copy node: one kernel node alone), so an eager launch before the graph ever ran finds it.
  std::vector<DeviceBank::GroupItem> tail(items.begin() + 32, items.end());
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  bank.check_group(tail, s);
  CUDA_OK(cudaStreamEndCapture(s, &g));
  std::size_t nodes = 0;
  CUDA_OK(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT_EQ(nodes, 1u);
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  cudaGraphDestroy(g);
  EXPECT_EQ(bank.tables_uploaded(), 2u);
  pool.host[pool.start[40] + 1] = std::numeric_limits<float>::quiet_NaN();
  pool.upload();
  bank.begin_step(1);
  bank.check_group(tail, s);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(bank.readback_step().kinds(0, 40), 1) << "the eager launch of the graph's list";
  EXPECT_EQ(bank.tables_uploaded(), 2u) << "it found the table the capture made";
  // Enough distinct eager lists (one buffer at a shifting offset) to recycle the tables' memory
  // several times over; the graph's table is kept through it.
  for (int k = 0; k < 20000; ++k)
    bank.check_group({{3, pool.at(3) + k % 1000, static_cast<std::size_t>(1 + k / 1000)}}, s);
  EXPECT_EQ(bank.tables_uploaded(), 20002u) << "each (buffer, count) its own list";
  pool.host[pool.start[40] + 1] = 1.0f;
  pool.host[pool.start[63] + 2] = std::numeric_limits<float>::infinity();
  pool.upload();
  bank.begin_step(2);
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  const auto r = bank.readback_step();
  EXPECT_EQ(r.kinds(0, 63), 2) << "the graph still reads its own table";
  EXPECT_EQ(r.kinds(0, 40), 0);
  EXPECT_EQ(r.kinds(0, 3), 0);
  cudaGraphExecDestroy(exec);
  cudaStreamDestroy(s);
}
