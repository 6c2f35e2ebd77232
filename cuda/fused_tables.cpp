#include "fused_tables.h"

#include <fmt/format.h>

#include <algorithm>

#include "device_array.h"

namespace nanscope::cuda {

struct FusedTables::Chunk {
  unsigned char* device = nullptr;
  std::size_t used = 0;
  bool kept = false;  // holds a table a captured graph launches: never recycled
  explicit Chunk(std::size_t bytes) { NANSCOPE_CUDA_CHECK(cudaMalloc(&device, bytes)); }
  ~Chunk() { cudaFree(device); }
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
};

FusedTables::FusedTables(std::size_t chunk_bytes) : chunk_bytes_(chunk_bytes) {
  NANSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&upload_, cudaStreamNonBlocking));
  chunks_.push_back(std::make_unique<Chunk>(chunk_bytes_));
}

FusedTables::~FusedTables() {
  cudaStreamDestroy(upload_);
}

namespace {

// While this thread captures a stream in global or thread-local mode, CUDA refuses calls that may
// synchronise or allocate; a relaxed thread may make them. A new table's copy waits for the tables'
// own stream only, which is not captured, and a new chunk's memory is not part of any graph, so
// both relax the mode for that call and restore it after.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { NANSCOPE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode_)); }
  ~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace

void FusedTables::copy(const Entry& e, std::string_view bytes) {
  const RelaxedCaptureMode relaxed;
  NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(e.chunk->device + e.offset, bytes.data(), bytes.size(),
                                      cudaMemcpyHostToDevice, upload_));
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(upload_));
  ++uploads_;
}

void FusedTables::used_eagerly(const Entry& e, cudaStream_t stream) {
  // Only the chunk being filled is ever reused; a kept table's memory never is.
  if (e.kept || e.chunk != chunks_.back().get()) return;
  if (std::find(eager_streams_.begin(), eager_streams_.end(), stream) == eager_streams_.end())
    eager_streams_.push_back(stream);
}

void FusedTables::recycle() {
  const RelaxedCaptureMode relaxed;
  Chunk* last = chunks_.back().get();
  // The chunk's eager launches are waited for, unless one of their streams is being captured now
  // (it cannot be waited for): then, as when the chunk holds a kept table, new tables go to a new
  // chunk and its eager tables stay, unused, beside the kept ones.
  bool reusable = !last->kept;
  for (cudaStream_t s : eager_streams_) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &status) != cudaSuccess) {
      cudaGetLastError();  // the legacy stream while another captures: not waited for either
      reusable = false;
    }
    reusable = reusable && status == cudaStreamCaptureStatusNone;
  }
  if (reusable)
    for (cudaStream_t s : eager_streams_) NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  eager_streams_.clear();
  if (!reusable) {
    std::erase_if(index_,
                  [&](const auto& kv) { return kv.second.chunk == last && !kv.second.kept; });
    chunks_.push_back(std::make_unique<Chunk>(chunk_bytes_));
    return;
  }
  std::erase_if(index_, [&](const auto& kv) { return kv.second.chunk == last; });
  last->used = 0;
}

const unsigned char* FusedTables::find_or_upload(std::string_view bytes, cudaStream_t stream,
                                                 bool capturing) {
  if (const auto it = index_.find(bytes); it != index_.end()) {
    Entry& e = it->second;
    if (capturing)
      e.kept = e.chunk->kept = true;
    else
      used_eagerly(e, stream);
    return e.chunk->device + e.offset;
  }
  constexpr std::size_t kAlign = 256;
  const std::size_t need = (bytes.size() + kAlign - 1) / kAlign * kAlign;
  if (need > chunk_bytes_)
    throw InternalError(fmt::format("FusedTables: a table of {} bytes is larger than a chunk ({})",
                                    bytes.size(), chunk_bytes_));
  if (chunks_.back()->used + need > chunk_bytes_) recycle();
  Chunk* c = chunks_.back().get();
  const Entry e{c, c->used, capturing};
  c->used += need;
  copy(e, bytes);
  if (capturing)
    c->kept = true;
  else
    used_eagerly(e, stream);
  index_.emplace(std::string(bytes), e);
  return c->device + e.offset;
}

}  // namespace nanscope::cuda
