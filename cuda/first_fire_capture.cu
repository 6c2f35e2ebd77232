#include <cuda_runtime.h>

#include "core/errors.h"
#include "first_fire_capture.h"
#include "sentinel_check.h"

namespace nanscope::cuda {
namespace {

// Every source into area table[0], 4-byte words, grid-stride; nothing unless a first fire.
__global__ void copy_context(const std::uint32_t* first_fire, const int* table, int areas,
                             int sources, const void* const* src, void* const* dst,
                             const std::size_t* words) {
  if (*first_fire == 0u) return;
  const int area = table[0];
  if (area >= areas) return;  // the table notes the overflow
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (int k = 0; k < sources; ++k) {
    const auto* s = static_cast<const std::uint32_t*>(src[k]);
    auto* d = static_cast<std::uint32_t*>(dst[k]) + static_cast<std::size_t>(area) * words[k];
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
         i < words[k]; i += stride)
      d[i] = s[i];
  }
}

// After the copy (stream order): the area is taken by this step.
__global__ void note_context(const std::uint32_t* first_fire, int* table, int areas,
                             const int* step) {
  if (*first_fire == 0u) return;
  if (table[0] < areas) {
    table[1 + table[0]] = *step;
    ++table[0];
  } else {
    table[1 + areas] = 1;
  }
}

}  // namespace

ContextCapture::ContextCapture(const std::vector<Source>& sources, int areas, cudaStream_t stream)
    : sources_(sources),
      areas_(areas),
      stream_(stream),
      blocks_(2 * device_sm_count()),
      table_(static_cast<std::size_t>(areas) + 2),
      src_ptrs_(sources.size()),
      dst_ptrs_(sources.size()),
      words_(sources.size()) {
  std::vector<const void*> src;
  std::vector<void*> dst;
  std::vector<std::size_t> words;
  for (const Source& s : sources) {
    if (s.bytes % 4 != 0)
      throw InternalError("ContextCapture: a source is not a whole number of words");
    store_.emplace_back(s.bytes * static_cast<std::size_t>(areas));
    src.push_back(s.src);
    dst.push_back(store_.back().get());
    words.push_back(s.bytes / 4);
  }
  src_ptrs_.upload(src);
  dst_ptrs_.upload(dst);
  words_.upload(words);
  clear();
}

void ContextCapture::clear() {
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(table_.get(), 0, table_.size() * sizeof(int), stream_));
}

void ContextCapture::capture_if_fired(const std::uint32_t* first_fire, const int* step) {
  auto s = stream_;
  copy_context<<<blocks_, 256, 0, s>>>(first_fire, table_.get(), areas_,
                                       static_cast<int>(sources_.size()), src_ptrs_.get(),
                                       dst_ptrs_.get(), words_.get());
  NANSCOPE_LAUNCH_CHECK();
  note_context<<<1, 1, 0, s>>>(first_fire, table_.get(), areas_, step);
  NANSCOPE_LAUNCH_CHECK();
}

std::vector<int> ContextCapture::take_table() {
  auto s = stream_;
  std::vector<int> t(table_.size());
  NANSCOPE_CUDA_CHECK(
      cudaMemcpyAsync(t.data(), table_.get(), t.size() * sizeof(int), cudaMemcpyDeviceToHost, s));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  if (t[1 + static_cast<std::size_t>(areas_)] != 0)
    throw InternalError(
        "first-fire capture: more steps with a first fire than capture areas between two "
        "readbacks");
  clear();
  return std::vector<int>(t.begin() + 1, t.begin() + 1 + t[0]);
}

const void* ContextCapture::address(int area, int source) const {
  const Source& src = sources_.at(static_cast<std::size_t>(source));
  return store_[static_cast<std::size_t>(source)].get() +
         static_cast<std::size_t>(area) * src.bytes;
}

}  // namespace nanscope::cuda
