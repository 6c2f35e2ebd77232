// The fold's transitions resident on the device and the counter-based sampler of a step's batch
// and draws: the same batch indices and tau samples as the CPU backend for the same
// (seed, fold, step), from the same Philox functions (engine/data/philox.h). Streams are
// cudaStream_t (the public cuda_backend.h stays CUDA-free).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "data/transitions.h"

namespace nanscope::cuda {

struct SamplerShape {
  int B = 256, N = 32, Np = 32, K = 32;  // batch and IQN sample counts
  bool iqn = true;
};

class DeviceSampler {
 public:
  DeviceSampler(const SamplerShape& shape, cudaStream_t stream = nullptr);
  ~DeviceSampler();
  DeviceSampler(const DeviceSampler&) = delete;
  DeviceSampler& operator=(const DeviceSampler&) = delete;

  // Uploads a fold's transitions (as float32, like the CPU backend's float mode).
  void load_fold(const TransitionSet& t);
  // Fills the batch buffer ([s B*F; s' B*F; R B; done B; next_bar B*2], the batch slot's layout),
  // the actions [B, 3] and the taus on the device.
  void sample(std::uint64_t seed, int fold, int step);
  // The same in two parts: set_key stores (fold, step) on the device; draw reads it there (what a
  // captured step graph replays).
  void set_key(int fold, int step);
  void draw(std::uint64_t seed);

  // Device pointers and element counts (for checks and the trainer's kernels).
  const float* batch() const;
  std::size_t batch_count() const;
  const std::int32_t* actions() const;
  const float* tau() const;
  const float* tau_target() const;
  const float* tau_greedy() const;

  // Writable device buffers (fault injection into the batch or tau slot; installing a replayed
  // batch). tau pointers are null without the IQN head.
  struct Buffers {
    float* batch;
    std::int32_t* actions;
    float *tau, *tau_target, *tau_greedy;
    std::size_t batch_count, tau_count;  // element counts of the batch and tau buffers
  };
  Buffers buffers();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nanscope::cuda
