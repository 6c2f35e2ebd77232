// The fused check's tables in device memory (sentinel_check.cu). A launch reads its items (buffer,
// count, slot, capture area, execution position) and, for each of its blocks, the item that block
// scans, from device memory rather than from its parameters, so that one launch checks any number
// of slots. A table is made once per distinct list: a trainer checks the same lists step after
// step, and a list met again finds its table. A table used while its stream is captured into a
// graph is kept as long as the bank lives (the graph holds its address and may launch it any time);
// the others are recycled when their memory runs out, once the streams that used them are done.
// Nothing here allocates or waits on a stream being captured.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nanscope::cuda {

// One item of a fused check as its kernel reads it.
struct FusedItem {
  const void* x;  // `n` values of element type `type`
  unsigned long long n;
  float* capture;  // the item's own capture area (null: the bank's arena, if it has one)
  int slot;
  int exec;  // its execution position, or -1 - k: the launch's k-th counted from its first
  unsigned first_block;  // blocks [first_block, first_block + blocks) of the launch scan this item
  unsigned blocks;
  unsigned type;  // an ElementType: float32, bfloat16 or float16
  unsigned reserved;
};
static_assert(sizeof(FusedItem) == 48, "the table's layout is read by device code");

// A launch's table as laid out in device memory: `count` FusedItems, then for each block of the
// launch the index of the item it scans (unsigned).
class FusedTables {
 public:
  // `chunk_bytes`: the device memory of one chunk of tables.
  explicit FusedTables(std::size_t chunk_bytes);
  ~FusedTables();
  FusedTables(const FusedTables&) = delete;
  FusedTables& operator=(const FusedTables&) = delete;

  // The device address of `bytes` (a table), copied there first when this list is new: on the
  // tables' own stream, before this returns, also while `stream` is being captured (the thread's
  // capture mode relaxed for that copy alone), so a graph holds no copy of its own. A table used in
  // a capture is kept; otherwise `stream` is remembered as one to wait for before its memory is
  // reused.
  const unsigned char* find_or_upload(std::string_view bytes, cudaStream_t stream, bool capturing);
  std::size_t uploads() const { return uploads_; }  // tables copied to the device so far
  // The launches made so far outside a capture are known to have finished (DeviceBank's).
  void launches_done() { eager_streams_.clear(); }

 private:
  struct Chunk;
  struct Entry {
    Chunk* chunk;
    std::size_t offset;
    bool kept;  // used inside a capture: its memory is never reused
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  void copy(const Entry& e, std::string_view bytes);
  void recycle();
  void used_eagerly(const Entry& e, cudaStream_t stream);

  std::size_t chunk_bytes_;
  std::vector<std::unique_ptr<Chunk>> chunks_;  // the last one is being filled
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> index_;
  std::vector<cudaStream_t> eager_streams_;  // launched the last chunk's tables outside a capture
  cudaStream_t upload_ = nullptr;
  std::size_t uploads_ = 0;
};

}  // namespace nanscope::cuda
