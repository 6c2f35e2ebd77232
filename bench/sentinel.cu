// bench/sentinel: the device-side sentinel check on its own.
//  sentinel_big: one 2^28-float buffer, the step's fused check (and the older two-pass check)
//                against a read-only grid-stride pass over the same buffer (four float4 loads in
//                flight per thread, a sum into per-block partials, same grid), same run. >= 90%.
//  sentinel_set: a CUDA graph of exactly the check launches of one step of the CUDA backend (as the
//                backend notes them while running a real step of the default config) over buffers
//                of the same lengths; every checked slot's buffer in one launch; the older
//                one-check-per-slot graph; the cost of the checks that producers make. The shapes
//                (every checked slot) and the times go to files for the PyTorch peer
//                (bench/torch_amp_check.py, same session), which prints the ratios.
//  sentinel_big bf16/fp16: 2^28 values of each 16-bit type checked in their own type, against a
//                read-only pass over the same bytes that widens every value to float and sums it
//                (the same loads, eight values a load), same run. >= 90%.
//  sentinel_set bf16: the default config's checked slots' lengths as bfloat16 buffers (one
//                allocation, each 16-byte aligned) in one fused launch of one graph, against the
//                widening read pass over the same bytes (one launch of one graph). Within 10%.
//  sentinel_many: a wide table (an SDK trainer's 4,096 slots) checked in one launch of one graph:
//                4,096 slots of 4,096 floats against the read-only pass over the same bytes (one
//                graph of one launch each), >= 80%; 4,096 slots of 64 floats, <= 15 us a launch of
//                the graph. A NaN planted in the last slot but one must then be found.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/config.h"
#include "core/half_float.h"
#include "core/sentinel.h"
#include "cuda_backend.h"
#include "dense.h"
#include "model/dims.h"
#include "reduce.cuh"
#include "reference/reference_check.h"
#include "sentinel_check.h"
#include "step_check_plan.h"
#include "test_seams.h"

using namespace nanscope;
using nanscope::bench::median;

namespace {

__global__ void fill(float* x, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] = static_cast<float>((i * 2654435761u) % 1000u) * 1e-3f - 0.5f;
}

__global__ void empty_kernel() {}

// The ceiling: read every element once (float4, four loads in flight per thread, as the fused check
// does), add into a per-thread sum, reduce per block, write one value per block.
__global__ void read_pass(const float* __restrict__ x, size_t n, float* __restrict__ out) {
  float acc = 0.f;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n / 4; i += 4 * stride) {
    float4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = __ldg(x4 + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  for (; i < n / 4; i += stride) {
    const float4 v = __ldg(x4 + i);
    acc += v.x + v.y + v.z + v.w;
  }
  const float sum = nanscope::cuda::block_reduce<256>(acc, nanscope::cuda::Plus());
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

__global__ void fill_half(unsigned short* x, size_t n, bool bf16) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    // Values in [-0.5, 0.5): a bfloat16's or a float16's bits of them (truncated: finite).
    const float v = static_cast<float>((i * 2654435761u) % 1000u) * 1e-3f - 0.5f;
    const unsigned w = __float_as_uint(v);
    x[i] = bf16 ? static_cast<unsigned short>(w >> 16)
                : static_cast<unsigned short>(__half_as_ushort(__float2half_rz(v)));
  }
}

// The 16-bit ceiling: every value read once (16-byte loads, four in flight per thread) and widened
// to float into a per-thread sum, reduced per block, one value written per block.
template <class Half>
__global__ void read_pass_half(const unsigned short* __restrict__ x, size_t n,
                               float* __restrict__ out) {
  float acc = 0.f;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  auto add = [&](const uint4& v) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k)
      acc += static_cast<float>(Half{static_cast<unsigned short>(w[k] & 0xffffu)}) +
             static_cast<float>(Half{static_cast<unsigned short>(w[k] >> 16)});
  };
  for (; i + 3 * stride < n / 8; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = __ldg(xv + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) add(v[u]);
  }
  for (; i < n / 8; i += stride) add(__ldg(xv + i));
  const float sum = nanscope::cuda::block_reduce<256>(acc, nanscope::cuda::Plus());
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

template <class F>
double time_ms(F f, int reps, cudaStream_t s) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) f();
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a, s);
    f();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const char* shapes_file = argc > 1 ? argv[1] : "sentinel_set_shapes.txt";
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const int sms = nanscope::cuda::device_sm_count();

  // --- sentinel_big
  const size_t n = size_t{1} << 28;
  float* big = nullptr;
  float* partial = nullptr;
  cudaMalloc(&big, n * sizeof(float));
  cudaMalloc(&partial, 4096 * sizeof(float));
  fill<<<4 * sms, 256, 0, s>>>(big, n);
  nanscope::cuda::DeviceBank bank(1, s);
  nanscope::cuda::ReferenceCheck reference;  // the two-pass check (cuda/reference)
  bank.begin_step(0);
  const int blocks = 4 * sms;
  const double check_ms = time_ms([&] { reference(bank, 0, big, n, blocks); }, 20, s);
  const double pass_ms = time_ms([&] { read_pass<<<blocks, 256, 0, s>>>(big, n, partial); }, 20, s);
  // The fused check as the step's checks run (DeviceBank::check_group, one item).
  const double fused_big_ms = time_ms([&] { bank.check_group({{1, big, n}}); }, 20, s);
  const double gb = n * sizeof(float) / 1e9;
  std::printf("bench sentinel on %s (%d SMs)\n", prop.name, sms);
  std::printf(
      "sentinel_big  2^28 floats: check %.3f ms (%.2f TB/s), read-only pass %.3f ms (%.2f TB/s), "
      "check = %.1f%% of the pass\n",
      check_ms, gb / check_ms, pass_ms, gb / pass_ms, 100.0 * pass_ms / check_ms);
  std::printf(
      "sentinel_big  2^28 floats, the fused check of the step: %.3f ms (%.2f TB/s) = %.1f%% of the "
      "pass\n",
      fused_big_ms, gb / fused_big_ms, 100.0 * pass_ms / fused_big_ms);
  cudaFree(big);

  // --- sentinel_big in bfloat16 and float16: 2^28 values in their own type (half the bytes).
  bool half_clean = true;
  for (const bool bf16 : {true, false}) {
    unsigned short* half = nullptr;
    cudaMalloc(&half, n * sizeof(unsigned short));
    fill_half<<<4 * sms, 256, 0, s>>>(half, n, bf16);
    const auto type = bf16 ? ElementType::BFloat16 : ElementType::Float16;
    const double half_check_ms = time_ms(
        [&] {
          bank.check_group({{1, half, n, nullptr, -1, type}});
        },
        20, s);
    const double half_pass_ms = time_ms(
        [&] {
          if (bf16)
            read_pass_half<BFloat16><<<blocks, 256, 0, s>>>(half, n, partial);
          else
            read_pass_half<Float16><<<blocks, 256, 0, s>>>(half, n, partial);
        },
        20, s);
    half_clean = half_clean && bank.readback_step().step_status == 0;
    const double half_gb = n * sizeof(unsigned short) / 1e9;
    std::printf(
        "sentinel_big  2^28 %s, the fused check in its own type: %.3f ms (%.2f TB/s); widening "
        "read-only pass %.3f ms (%.2f TB/s): check = %.1f%% of the pass\n",
        bf16 ? "bfloat16" : "float16", half_check_ms, half_gb / half_check_ms, half_pass_ms,
        half_gb / half_pass_ms, 100.0 * half_pass_ms / half_check_ms);
    cudaFree(half);
  }

  // --- sentinel_set: the check launches one step of the CUDA backend enqueues under the default
  // config (noted by the backend as it runs a real step, bench/step_check_plan.h), over buffers of
  // the same lengths. Slots their producer kernels check as they write them (the bias-and-relu that
  // makes iqn_phi, Adam for adam_moments and params) are not in these launches; what those checks
  // add to their producers is timed below (iqn_phi's) and within sentinel_overhead (the step).
  Config config;
  const nanscope::cuda::StepCheckPlan plan = bench::step_check_plan(config);
  // Every checked slot of the step, launched or checked by its producer (slots 33-35 check the same
  // buffer at three moments: three items over one allocation here).
  std::vector<std::pair<int, size_t>> slots;
  for (const auto& launch : plan.launches)
    for (const auto& it : launch) slots.push_back({it.slot, it.count});
  for (const auto& it : plan.in_producers) slots.push_back({it.slot, it.count});
  std::sort(slots.begin(), slots.end());
  // The plan must hold every slot the default config checks, so the peer reads the same set.
  const SlotSetup setup = slot_setup(config);
  std::vector<int> checked;
  for (int i = 0; i < kBuiltinSlotCount; ++i)
    if (setup.checked(i)) checked.push_back(i);
  std::vector<int> planned;
  for (const auto& [slot, count] : slots) planned.push_back(slot);
  if (planned != checked) {
    std::fprintf(
        stderr,
        "bench_sentinel: the step's checks (%zu slots) are not the config's checked slots (%zu)\n",
        planned.size(), checked.size());
    return 1;
  }
  std::ofstream shapes(shapes_file);
  size_t total = 0;
  std::vector<float*> bufs;
  for (auto& [slot, count] : slots) {
    shapes << count << "\n";
    total += count;
    float* p = nullptr;
    cudaMalloc(&p, count * sizeof(float));
    fill<<<64, 256, 0, s>>>(p, count);
    bufs.push_back(p);
  }
  auto buffer_of = [&](int slot) {
    for (size_t k = 0; k < slots.size(); ++k)
      if (slots[k].first == slot) return bufs[k];
    return static_cast<float*>(nullptr);  // not reached: every slot of the plan has its buffer
  };
  auto graph_of = [&](auto enqueue) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    enqueue();
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphDestroy(g);
    return e;
  };

  // The older form for comparison: one two-pass check per slot.
  nanscope::cuda::DeviceBank set_bank(2, s);
  set_bank.begin_step(0);
  cudaGraphExec_t per_slot = graph_of([&] {
    for (size_t k = 0; k < slots.size(); ++k)
      reference(set_bank, slots[k].first, bufs[k], slots[k].second);
  });
  const double set_ms = time_ms([&] { cudaGraphLaunch(per_slot, s); }, 200, s);
  const double eager_ms = time_ms(
      [&] {
        for (size_t k = 0; k < slots.size(); ++k)
          reference(set_bank, slots[k].first, bufs[k], slots[k].second);
      },
      50, s);
  auto r = set_bank.readback();
  std::printf(
      "sentinel_set  %zu checks over %zu floats (default config), one check per slot: graph %.1f "
      "us, "
      "eager %.1f us, status word %u (clean)\n",
      slots.size(), total, 1e3 * set_ms, 1e3 * eager_ms, r.step_status);

  std::vector<std::vector<nanscope::cuda::DeviceBank::GroupItem>> launches;
  size_t launched_floats = 0;
  for (const auto& launch : plan.launches) {
    launches.emplace_back();
    for (const auto& it : launch) {
      launches.back().push_back({it.slot, buffer_of(it.slot), it.count});
      launched_floats += it.count;
    }
  }
  std::string in_producers;
  size_t producer_floats = 0;
  for (const auto& it : plan.in_producers) {
    in_producers += (in_producers.empty() ? "" : ", ") + std::to_string(it.slot);
    producer_floats += it.count;
  }
  nanscope::cuda::DeviceBank fused_bank(2, s);
  fused_bank.begin_step(0);
  cudaGraphExec_t step_checks = graph_of([&] {
    for (const auto& items : launches) fused_bank.check_group(items);
  });
  const double fused_ms = time_ms([&] { cudaGraphLaunch(step_checks, s); }, 500, s);
  // Every checked slot's whole buffer in one fused launch: the same bytes as the torch peer reads.
  std::vector<nanscope::cuda::DeviceBank::GroupItem> all;
  for (size_t k = 0; k < slots.size(); ++k)
    all.push_back({slots[k].first, bufs[k], slots[k].second});
  cudaGraphExec_t one_launch = graph_of([&] { fused_bank.check_group(all); });
  const double all_ms = time_ms([&] { cudaGraphLaunch(one_launch, s); }, 500, s);
  // A graph of one empty kernel: what a launch costs on its own here.
  cudaGraphExec_t empty = graph_of([&] { empty_kernel<<<1, 32, 0, s>>>(); });
  const double empty_ms = time_ms([&] { cudaGraphLaunch(empty, s); }, 500, s);
  const auto fr = fused_bank.readback();
  std::printf(
      "sentinel_set  the step's check launches: %zu launch(es) over %zu floats, graph %.2f us; "
      "checked in "
      "their producers: slots %s (%zu floats); every checked slot in one launch (%zu floats): %.2f "
      "us; "
      "a graph of one empty kernel: %.2f us; status word %u (clean)\n",
      launches.size(), launched_floats, 1e3 * fused_ms, in_producers.c_str(), producer_floats,
      total, 1e3 * all_ms, 1e3 * empty_ms, fr.step_status);
  // What checking in the producer costs the producer: the bias-and-relu launch that makes iqn_phi
  // ([B*N, H]), plain and checking its output.
  for (const auto& it : plan.in_producers) {
    if (it.slot != kIqnPhi) continue;
    const int cols = Dims::from(config).H,
              rows = static_cast<int>(it.count / static_cast<size_t>(cols));
    float *pre = nullptr, *out = nullptr, *bias = nullptr;
    cudaMalloc(&pre, it.count * sizeof(float));
    cudaMalloc(&out, it.count * sizeof(float));
    cudaMalloc(&bias, cols * sizeof(float));
    cudaMemcpyAsync(pre, buffer_of(kIqnPhi), it.count * sizeof(float), cudaMemcpyDeviceToDevice, s);
    cudaMemsetAsync(bias, 0, cols * sizeof(float), s);  // a zero bias keeps the values as they are
    const double plain_ms =
        time_ms([&] { nanscope::cuda::bias_relu(pre, bias, rows, cols, out, s); }, 500, s);
    const double checked_ms = time_ms(
        [&] { nanscope::cuda::bias_relu(pre, bias, rows, cols, out, s, fused_bank.sink(kIqnPhi)); },
        500, s);
    std::printf(
        "sentinel_set  iqn_phi's bias and relu (%zu floats): plain %.2f us, checking its output "
        "%.2f us "
        "(%+.2f us)\n",
        it.count, 1e3 * plain_ms, 1e3 * checked_ms, 1e3 * (checked_ms - plain_ms));
    cudaFree(pre);
    cudaFree(out);
    cudaFree(bias);
  }
  if (std::FILE* f = std::fopen((std::string(shapes_file) + ".us").c_str(), "w")) {
    // For the peer's ratios: the step's check launches, then every slot in one launch.
    std::fprintf(f, "%.3f\n%.3f\n", 1e3 * fused_ms, 1e3 * all_ms);
    std::fclose(f);
  }
  std::printf("shapes written to %s for bench/torch_amp_check.py\n", shapes_file);
  for (float* p : bufs) cudaFree(p);

  // --- sentinel_set in bfloat16: the same lengths as bfloat16 buffers in one allocation (each
  // starting 16-byte aligned), every slot in one fused launch of one graph, against the widening
  // read pass over the same bytes.
  {
    std::vector<size_t> at;
    size_t values = 0;
    for (const auto& [slot, count] : slots) {
      at.push_back(values);
      values += (count + 7) / 8 * 8;
    }
    unsigned short* pool = nullptr;
    cudaMalloc(&pool, values * sizeof(unsigned short));
    fill_half<<<4 * sms, 256, 0, s>>>(pool, values, true);
    std::vector<nanscope::cuda::DeviceBank::GroupItem> items;
    for (size_t k = 0; k < slots.size(); ++k)
      items.push_back(
          {slots[k].first, pool + at[k], slots[k].second, nullptr, -1, ElementType::BFloat16});
    nanscope::cuda::DeviceBank bf_bank(2, s);
    bf_bank.begin_step(0);
    bf_bank.check_group(items);  // the table made once
    bf_bank.begin_step(0);
    cudaGraphExec_t check = graph_of([&] { bf_bank.check_group(items); });
    cudaGraphExec_t pass =
        graph_of([&] { read_pass_half<BFloat16><<<4 * sms, 256, 0, s>>>(pool, values, partial); });
    const double check_us = 1e3 * time_ms([&] { cudaGraphLaunch(check, s); }, 500, s);
    const double pass_us = 1e3 * time_ms([&] { cudaGraphLaunch(pass, s); }, 500, s);
    half_clean = half_clean && bf_bank.readback_step().step_status == 0;
    std::printf(
        "sentinel_set  bf16: %zu slots (%zu bfloat16 values) in one launch of one graph: %.2f us; "
        "widening read-only pass over the same bytes %.2f us: check / pass = %.3f\n",
        slots.size(), values, check_us, pass_us, check_us / pass_us);
    cudaGraphExecDestroy(check);
    cudaGraphExecDestroy(pass);
    cudaFree(pool);
  }

  // --- sentinel_many
  bool found_all = true;
  for (const size_t per_slot : {size_t{4096}, size_t{64}}) {
    constexpr int kMany = 4096;
    const size_t floats = kMany * per_slot;
    float* pool = nullptr;
    cudaMalloc(&pool, floats * sizeof(float));
    fill<<<4 * sms, 256, 0, s>>>(pool, floats);
    nanscope::cuda::DeviceBank many(nanscope::cuda::BankShape{kMany, 2, false, 0}, s);
    many.begin_step(0);
    std::vector<nanscope::cuda::DeviceBank::GroupItem> items;
    for (int k = 0; k < kMany; ++k) items.push_back({k, pool + k * per_slot, per_slot});
    many.check_group(items);  // the launch's table made once, as a trainer's first step does
    many.begin_step(0);       // the same execution positions in the graph: the same table
    cudaGraphExec_t check = graph_of([&] { many.check_group(items); });
    cudaGraphExec_t pass =
        graph_of([&] { read_pass<<<4 * sms, 256, 0, s>>>(pool, floats, partial); });
    const double many_ms = time_ms([&] { cudaGraphLaunch(check, s); }, 200, s);
    const double many_pass_ms = time_ms([&] { cudaGraphLaunch(pass, s); }, 200, s);
    const unsigned clean = many.readback_step().step_status;
    // The same graph finds a NaN planted in slot 4094 (its table is the one the launches read).
    const float nan = __builtin_nanf("");
    cudaMemcpyAsync(pool + (kMany - 2) * per_slot + per_slot / 2, &nan, sizeof nan,
                    cudaMemcpyHostToDevice, s);
    cudaGraphLaunch(check, s);
    const auto fired = many.readback_step();
    const bool found = clean == 0 && fired.records[kMany - 2].kinds == 1 &&
                       fired.kinds(0, kMany - 2) == 1 && fired.records[kMany - 1].kinds == 0;
    found_all = found_all && found;
    std::printf(
        "sentinel_many %d slots x %zu floats in one launch of one graph: %.2f us (%.2f TB/s); "
        "read-only pass over the same bytes %.2f us: check = %.1f%% of the pass; tables made %zu; "
        "planted NaN in slot %d %s\n",
        kMany, per_slot, 1e3 * many_ms, floats * sizeof(float) / 1e9 / many_ms, 1e3 * many_pass_ms,
        100.0 * many_pass_ms / many_ms, many.tables_uploaded(), kMany - 2,
        found ? "found" : "NOT FOUND");
    cudaGraphExecDestroy(check);
    cudaGraphExecDestroy(pass);
    cudaFree(pool);
  }
  return cudaGetLastError() == cudaSuccess && found_all && half_clean ? 0 : 1;
}
