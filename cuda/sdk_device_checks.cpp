// The SDK's device path: a trainer's device buffers checked by the CUDA backend's own DeviceBank
// (the fused check, its first-fire copies into capture areas, the status word the guard reads) on
// the trainer's stream. The bank counts the steps itself (begin_counted_step), so a step the
// trainer captured into a graph is counted at each replay; the host reads what ran at its next
// read.
#include "sdk_device_checks.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>

#include "core/half_float.h"
#include "device_array.h"
#include "sentinel_check.h"

namespace nanscope::cuda {
namespace {

cudaStream_t as_stream(void* s) {
  return static_cast<cudaStream_t>(s);
}

using AddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);

class DeviceChecks final : public SdkDeviceChecks {
 public:
  DeviceChecks() {
    NANSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking));
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(zero_.get(), 0, sizeof(std::uint32_t), own_));
    NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(own_));
    // The driver's allocation ranges, without linking the driver library.
    cudaDriverEntryPointQueryResult found{};
    void* fn = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                         &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      address_range_ = reinterpret_cast<AddressRange>(fn);
  }

  void prepare(const SdkDeviceShape& shape) override {
    shape_ = shape;
    int device = 0;
    cudaDeviceProp p{};
    NANSCOPE_CUDA_CHECK(cudaGetDevice(&device));
    NANSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    device_name_ = p.name;  // asked again at every run file write, also after a CUDA fault
    bank_.reset();          // its memory first, before the next one's
    bank_ = std::make_unique<DeviceBank>(BankShape{shape.slots, shape.rows, shape.health,
                                                   static_cast<std::size_t>(shape.capture_floats)},
                                         own_);
    // The check kernels run once here, outside any capture, so that their module is loaded before
    // a trainer captures them (CUDA loads kernels lazily, at their first launch).
    // Each element type's kernel (one a type), bfloat16's and float16's too.
    for (const ElementType type :
         {ElementType::Float32, ElementType::BFloat16, ElementType::Float16})
      bank_->check_group({{0, zero_.get(), 1, nullptr, -1, type}}, own_);
    NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(own_));
    begin_fold();
  }
  ~DeviceChecks() override {
    bank_.reset();
    cudaStreamDestroy(own_);
  }

  std::string pointer_problem(std::uint64_t address, std::uint64_t bytes) override {
    cudaPointerAttributes a{};
    const void* p = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address));
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      const cudaError_t e = cudaGetLastError();
      return fmt::format("not an address CUDA knows ({})", cudaGetErrorString(e));
    }
    if (a.type == cudaMemoryTypeUnregistered)
      return "not device memory (host memory, or a device buffer already freed)";
    if (a.type == cudaMemoryTypeHost) return "pinned host memory, not device memory";
    int device = 0;
    NANSCOPE_CUDA_CHECK(cudaGetDevice(&device));
    if (a.device != device)
      return fmt::format("memory of device {}, not of the current device {}", a.device, device);
    if (!address_range_) return {};
    // The range, allocation by allocation: an allocator that maps one buffer from several
    // physical chunks (PyTorch's expandable segments) gives adjacent ranges.
    const std::uint64_t end = address + bytes;
    std::uint64_t at = address;
    for (int pieces = 0; at < end; ++pieces) {
      CUdeviceptr base = 0;
      size_t size = 0;
      // Past an allocation's end, the next address is asked of cudaPointerGetAttributes first,
      // which answers "unregistered" without an error (the driver's range query fails with one,
      // which a checking tool such as compute-sanitizer reports).
      cudaPointerAttributes next{};
      const bool device_memory =
          pieces == 0 ||
          (cudaPointerGetAttributes(&next, reinterpret_cast<const void*>(
                                               static_cast<std::uintptr_t>(at))) == cudaSuccess &&
           next.type == cudaMemoryTypeDevice);
      if (!device_memory) cudaGetLastError();
      if (!device_memory ||
          address_range_(&base, &size, static_cast<CUdeviceptr>(at)) != CUDA_SUCCESS || size == 0)
        return pieces == 0 ? std::string("not inside a device allocation (freed?)")
                           : fmt::format(
                                 "{} bytes run past the end of its allocation ({} bytes "
                                 "are allocated from its start)",
                                 bytes, at - address);
      at = base + size;
    }
    return {};
  }

  bool capturing(void* stream) override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(as_stream(stream), &status);
    // The legacy stream asked about while another stream captures in global mode: a capture is
    // under way (the query itself is what CUDA refuses).
    if (e == cudaErrorStreamCaptureImplicit) {
      cudaGetLastError();
      return true;
    }
    NANSCOPE_CUDA_CHECK(e);
    return status != cudaStreamCaptureStatusNone;
  }

  void begin_fold() override {
    bank_->reset_fold();  // every row cleared
    bank_->rewind(own_, 0);
  }

  // Launches inside the trainer's capture must not synchronise (NANSCOPE_SYNC_LAUNCHES).
  void begin_step(void* stream) override {
    capturing_graph = capturing(stream);
    bank_->begin_counted_step(as_stream(stream));
  }

  void check(const std::vector<SdkDeviceItem>& items, void* stream) override {
    capturing_graph = capturing(stream);
    std::vector<DeviceBank::GroupItem> group;
    group.reserve(items.size());
    for (const SdkDeviceItem& it : items)
      group.push_back({it.slot,
                       reinterpret_cast<const void*>(static_cast<std::uintptr_t>(it.address)),
                       static_cast<std::size_t>(it.count), nullptr, -1, it.type});
    bank_->check_group(group, as_stream(stream));
  }

  SdkDeviceRead read(void* stream) override {
    NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
    // Every check of the session ran on a step's stream, and each step's stream is waited for
    // here: the bank need not wait for (or keep handles to) streams the trainer may destroy.
    bank_->launches_done();
    SdkDeviceRead r;
    r.steps = bank_->steps_begun();
    const std::size_t rows = std::min<std::size_t>(r.steps, static_cast<std::size_t>(shape_.rows));
    const BankReadback b = bank_->readback_rows(0, rows);
    r.slots = b.slots;
    r.rows.resize(rows * static_cast<std::size_t>(b.slots));
    for (std::size_t row = 0; row < rows; ++row)  // without the rows' padding
      for (int s = 0; s < b.slots; ++s)
        r.rows[row * static_cast<std::size_t>(b.slots) + static_cast<std::size_t>(s)] =
            b.kinds(row, s);
    r.records.reserve(b.records.size());
    for (const DeviceSlotRecord& d : b.records)
      r.records.push_back({d.kinds, d.first_step, d.count, d.exec_position});
    if (shape_.health) r.health = bank_->read_health_rows();
    bank_->rewind(own_, rows);
    return r;
  }

  std::vector<float> captured(int slot, std::uint64_t count) override {
    return bank_->captured(slot, static_cast<std::size_t>(count));
  }

  std::vector<float> copy_out(void* stream, std::uint64_t address, std::uint64_t count) override {
    NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
    std::vector<float> out(static_cast<std::size_t>(count));
    NANSCOPE_CUDA_CHECK(
        cudaMemcpy(out.data(), reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address)),
                   out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }

  double read_value(void* stream, std::uint64_t address, ElementType type) override {
    NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
    const void* at = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address));
    switch (type) {
      case ElementType::BFloat16:
      case ElementType::Float16: {
        std::uint16_t bits = 0;
        NANSCOPE_CUDA_CHECK(cudaMemcpy(&bits, at, sizeof bits, cudaMemcpyDeviceToHost));
        return type == ElementType::BFloat16 ? static_cast<float>(BFloat16{bits})
                                             : static_cast<float>(Float16{bits});
      }
      case ElementType::Float64: {
        double v = 0;
        NANSCOPE_CUDA_CHECK(cudaMemcpy(&v, at, sizeof v, cudaMemcpyDeviceToHost));
        return v;
      }
      case ElementType::Float32:
        break;
    }
    float v = 0;
    NANSCOPE_CUDA_CHECK(cudaMemcpy(&v, at, sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }

  std::string device_name() override { return device_name_; }

  std::uint64_t status_word() override {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(bank_->status_word()));
  }
  std::uint64_t zero_word() override {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(zero_.get()));
  }

 private:
  SdkDeviceShape shape_;
  cudaStream_t own_ = nullptr;  // the bank's: its clears and reads
  std::unique_ptr<DeviceBank> bank_;
  DeviceArray<std::uint32_t> zero_{1};
  AddressRange address_range_ = nullptr;
  std::string device_name_ = "a CUDA device";
};

}  // namespace

std::unique_ptr<SdkDeviceChecks> make_sdk_device_checks() {
  return std::make_unique<DeviceChecks>();
}

}  // namespace nanscope::cuda
