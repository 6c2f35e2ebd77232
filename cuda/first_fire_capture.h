// First-fire capture of a step's replay context on the device (streams are cudaStream_t; the public
// cuda_backend.h stays CUDA-free).
//
// A slot's buffer at its first fire in a fold is copied by the fused check itself (DeviceBank);
// what lives here is the rest of a dump: the state before the step (parameters and Adam state from
// the optimizer's shadow, the target network, Adam's t), the batch and the IQN draws. At the end of
// a step, if any slot fired for the first time in it, the context goes into the next free area and
// the step is noted in a small table; while clean, the two kernels read one word and return. The
// backend reads the table with the fold's records (CudaBackend::hand_over), so a recording run
// needs no per-step readback; it reads back at least every `areas()` steps, so the areas never run
// out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device_array.h"

namespace nanscope::cuda {

class ContextCapture {
 public:
  // One source array of the context: `bytes` at `src`, kept `bytes` apart in the areas.
  struct Source {
    const void* src;
    std::size_t bytes;
  };
  ContextCapture(const std::vector<Source>& sources, int areas, cudaStream_t stream);

  int areas() const { return areas_; }
  // Enqueues the capture: if *first_fire (the bank's word for this step) is set, copies every
  // source into the next free area and notes `*step` there. Graph-capturable.
  void capture_if_fired(const std::uint32_t* first_fire, const int* step);
  // Reads the table (which step each used area holds) and frees the areas for the next steps; the
  // contents stay until a later capture overwrites them. Synchronises the stream.
  std::vector<int> take_table();
  // The device address of source `source` in area `area` (laid out as the source).
  const void* address(int area, int source) const;
  void clear();  // frees every area (a new fold)

 private:
  std::vector<Source> sources_;
  int areas_;
  cudaStream_t stream_;
  int blocks_;                                     // the copy's grid
  std::vector<DeviceArray<unsigned char>> store_;  // per source: areas x bytes
  DeviceArray<int> table_;                         // [used, step of area 0.., overflowed]
  DeviceArray<const void*> src_ptrs_;
  DeviceArray<void*> dst_ptrs_;
  DeviceArray<std::size_t> words_;
};

}  // namespace nanscope::cuda
