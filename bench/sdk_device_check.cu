// The SDK's device check in a trainer's graph against the built-in check (bench/NOTES.md, "The
// SDK's device path"). Over the buffers of the default config's checked slots (the shapes
// bench_sentinel writes, one per line), three CUDA graphs, timed in alternating blocks, same run:
//   sdk      ns_step_begin + ns_check(every slot) + ns_step_end captured from the C API (a session
//            with the guard and first-fire capture on, health off as in sentinel_set);
//   builtin  the engine's fused check of every slot in one launch (DeviceBank::check_group, what
//            bench_sentinel's "every checked slot in one launch" times);
//   kernels  the same two kernels the SDK enqueues (the counted step begin and the fused check),
//            called on the engine's bank directly: what the library adds is sdk - kernels.
// After the blocks, ns_step_replayed accounts for every replay and must find them clean.
//   bench_sdk_device_check SHAPES_FILE [blocks, default 21] [launches per block, default 100]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nanscope/nanscope.h"
#include "sentinel_check.h"

namespace {

__global__ void fill(float* x, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] = static_cast<float>((i * 2654435761u) % 1000u) * 1e-3f - 0.5f;
}

template <class Enqueue>
cudaGraphExec_t graph_of(cudaStream_t s, Enqueue enqueue) {
  cudaGraph_t g;
  cudaGraphExec_t e = nullptr;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  enqueue();
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&e, g, 0);
  cudaGraphDestroy(g);
  return e;
}

// Microseconds per launch of `e` over one block of `launches`.
double block_us(cudaGraphExec_t e, cudaStream_t s, int launches, cudaEvent_t a, cudaEvent_t b) {
  cudaEventRecord(a, s);
  for (int i = 0; i < launches; ++i) cudaGraphLaunch(e, s);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return 1e3 * ms / launches;
}

int refused(const char* what) {
  std::fprintf(stderr, "bench_sdk_device_check: %s: %s\n", what, ns_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_sdk_device_check SHAPES_FILE [blocks] [launches]\n");
    return 2;
  }
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 21;
  const int launches = argc > 3 ? std::atoi(argv[3]) : 100;
  std::ifstream in(argv[1]);
  std::vector<size_t> counts;
  for (size_t n; in >> n;) counts.push_back(n);
  if (counts.empty() || counts.size() > 36 || blocks < 1 || launches < 1) {
    std::fprintf(stderr, "bench_sdk_device_check: %s: 1 to 36 buffer lengths expected\n", argv[1]);
    return 2;
  }
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  std::vector<float*> bufs;
  size_t total = 0;
  for (size_t n : counts) {
    float* p = nullptr;
    if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess) return 1;
    fill<<<64, 256, 0, s>>>(p, n);
    bufs.push_back(p);
    total += n;
  }
  cudaStreamSynchronize(s);

  const std::string dir = "/tmp/bench_sdk_device_check";
  ns_session_options o{};
  o.struct_size = sizeof o;
  o.run_dir = dir.c_str();
  o.trainer = "bench";
  o.guard = 1;
  o.capture = 1;
  o.overwrite = 1;
  ns_session session{};
  if (ns_session_open(&o, &session) != NS_OK) return refused("ns_session_open");
  std::vector<std::int32_t> ids;
  for (size_t k = 0; k < bufs.size(); ++k) {
    const std::string name = "s" + std::to_string(k);
    ns_slot_desc d{};
    d.struct_size = sizeof d;
    d.name = name.c_str();
    d.order = static_cast<int>(k);
    d.count = static_cast<std::int64_t>(counts[k]);
    d.dtype = NS_F32;
    d.memory = NS_DEVICE;
    d.address = reinterpret_cast<std::uint64_t>(bufs[k]);
    std::int32_t id = -1;
    if (ns_slot_register(session, &d, &id) != NS_OK) return refused("ns_slot_register");
    ids.push_back(id);
  }
  if (ns_fold_begin(session, 0) != NS_OK) return refused("ns_fold_begin");
  ns_status st = NS_OK;
  cudaGraphExec_t sdk = graph_of(s, [&] {
    if (st == NS_OK) st = ns_step_begin(session, 0, s);
    if (st == NS_OK) st = ns_check(session, ids.data(), static_cast<std::int32_t>(ids.size()), s);
    ns_step_result r{};
    r.struct_size = sizeof r;
    if (st == NS_OK) st = ns_step_end(session, &r);
  });
  if (st != NS_OK || !sdk) return refused("the captured step");

  nanscope::cuda::DeviceBank bank(64, s, false);
  std::vector<nanscope::cuda::DeviceBank::GroupItem> items;
  for (size_t k = 0; k < bufs.size(); ++k)
    items.push_back({static_cast<int>(k), bufs[k], counts[k]});
  bank.begin_step(0);
  cudaGraphExec_t builtin = graph_of(s, [&] { bank.check_group(items, s); });
  cudaGraphExec_t kernels = graph_of(s, [&] {
    bank.begin_counted_step(s);
    bank.check_group(items, s);
  });

  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> t_sdk, t_builtin, t_kernels;
  for (int i = 0; i < 3; ++i) {  // warm-up
    block_us(sdk, s, 10, a, b);
    block_us(builtin, s, 10, a, b);
    block_us(kernels, s, 10, a, b);
  }
  for (int blk = 0; blk < blocks; ++blk) {
    t_sdk.push_back(block_us(sdk, s, launches, a, b));
    t_builtin.push_back(block_us(builtin, s, launches, a, b));
    t_kernels.push_back(block_us(kernels, s, launches, a, b));
    // Rewinds the bank's rows between blocks, as a trainer's reads would.
    bank.rewind(s, 64);
  }
  ns_step_result r{};
  r.struct_size = sizeof r;
  if (ns_step_replayed(session, s, &r) != NS_OK) return refused("ns_step_replayed");
  if (r.fired != 0 || r.entry_slot != -1) {
    std::fprintf(stderr, "bench_sdk_device_check: a clean graph fired (slot %d)\n", r.entry_slot);
    return 1;
  }
  if (ns_session_close(session) != NS_OK) return refused("ns_session_close");
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const double us_sdk = nanscope::bench::median(t_sdk);
  const double us_builtin = nanscope::bench::median(t_builtin);
  const double us_kernels = nanscope::bench::median(t_kernels);
  std::printf("bench sdk_device_check on %s: %zu slots, %zu floats, median of %d blocks of %d\n",
              prop.name, counts.size(), total, blocks, launches);
  std::printf("sdk_check graph (ns_step_begin + ns_check + ns_step_end): %.2f us\n", us_sdk);
  std::printf("builtin fused check graph (every slot in one launch):   %.2f us\n", us_builtin);
  std::printf("the SDK's two kernels on the engine's bank directly:    %.2f us\n", us_kernels);
  std::printf("sdk / builtin = %.3f, sdk / kernels = %.3f\n", us_sdk / us_builtin,
              us_sdk / us_kernels);
  std::printf("sdk_check_status %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
