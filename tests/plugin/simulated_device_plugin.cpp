// A CUDA plugin whose SDK device table simulates the device bank in host memory, so that the SDK
// session's device-path accounting (replays, folds, guard, captures) is tested where there is no
// GPU. It keeps DeviceBank's contract (cuda/sentinel_check.h): the step row counted at each begun
// step and capped at the last row, kinds ORed into rows and records, a record's first step, count
// and execution position set once per fold, the first fire's buffer copied into the slot's area,
// the status word cleared at each step. "Device memory" is host memory here. A stream captures
// between nanscope_sim_capture(stream, 1) and (stream, 0): its begun steps and checks are recorded,
// and nanscope_sim_replay(stream) runs them, as a graph launch would.
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "core/version.h"
#include "cuda_plugin_api.h"

namespace {

using nanscope::SdkDeviceItem;

struct Op {
  bool begin = false;
  std::vector<SdkDeviceItem> items;
};

class Simulated;
Simulated* live = nullptr;
std::set<void*> capturing_streams;
std::map<void*, std::vector<Op>> graphs;

class Simulated final : public nanscope::SdkDeviceChecks {
 public:
  Simulated() { live = this; }
  ~Simulated() override {
    if (live == this) live = nullptr;
  }
  std::string pointer_problem(std::uint64_t address, std::uint64_t) override {
    return address ? "" : "not device memory";
  }
  bool capturing(void* stream) override { return capturing_streams.count(stream) != 0; }
  void prepare(const nanscope::SdkDeviceShape& shape) override {
    shape_ = shape;
    rows_.assign(static_cast<std::size_t>(shape.rows), {});
    for (std::size_t s = 0; s < areas_.size(); ++s) areas_[s].assign(shape.capture[s], 0.0f);
    begin_fold();
  }
  void begin_fold() override {
    records_.fill({});
    rows_.assign(rows_.size(), {});
    step_ = -1;
    begun_ = 0;
    status_ = 0;
  }
  void begin_step(void* stream) override {
    if (capturing(stream)) return graphs[stream].push_back({true, {}});
    run_begin();
  }
  void check(const std::vector<SdkDeviceItem>& items, void* stream) override {
    if (capturing(stream)) return graphs[stream].push_back({false, items});
    run_check(items);
  }
  nanscope::SdkDeviceRead read(void*) override {
    nanscope::SdkDeviceRead r;
    r.steps = begun_;
    const std::size_t used = std::min<std::size_t>(begun_, rows_.size());
    r.rows.assign(rows_.begin(), rows_.begin() + static_cast<std::ptrdiff_t>(used));
    r.records = records_;
    if (shape_.health)
      r.health.assign(nanscope::kSdkDeviceSlots * nanscope::kHealthFieldCount, NAN);
    for (std::size_t i = 0; i < used; ++i) rows_[i] = {};
    step_ = -1;
    begun_ = 0;
    return r;
  }
  std::vector<float> captured(int slot) override {
    return areas_.at(static_cast<std::size_t>(slot));
  }
  std::vector<float> copy_out(void*, std::uint64_t address, std::uint64_t count) override {
    const auto* p = reinterpret_cast<const float*>(static_cast<std::uintptr_t>(address));
    return std::vector<float>(p, p + count);
  }
  std::string device_name() override { return "simulated device"; }
  std::uint64_t status_word() override { return reinterpret_cast<std::uintptr_t>(&status_); }
  std::uint64_t zero_word() override { return reinterpret_cast<std::uintptr_t>(&zero_); }

  void replay(void* stream) {
    for (const Op& op : graphs[stream]) op.begin ? run_begin() : run_check(op.items);
  }

 private:
  void run_begin() {
    step_ = std::min(step_ + 1, static_cast<int>(rows_.size()) - 1);
    ++begun_;
    status_ = 0;
    exec_ = 0;
  }
  void run_check(const std::vector<SdkDeviceItem>& items) {
    for (const SdkDeviceItem& it : items) {
      const auto* x = reinterpret_cast<const float*>(static_cast<std::uintptr_t>(it.address));
      std::uint8_t kinds = 0;
      std::int64_t count = 0;
      for (std::uint64_t i = 0; i < it.count; ++i) {
        const std::uint8_t k = std::isnan(x[i]) ? 1 : std::isinf(x[i]) ? (x[i] > 0 ? 2 : 4) : 0;
        kinds |= k;
        count += k != 0;
      }
      const int exec = exec_++;
      if (!kinds) continue;
      const auto s = static_cast<std::size_t>(it.slot);
      rows_[static_cast<std::size_t>(step_)][s] |= kinds;
      status_ |= kinds;
      nanscope::SdkSlotRecord& rec = records_[s];
      rec.kinds |= kinds;
      if (rec.first_step < 0) {
        rec = {rec.kinds, step_, count, exec};
        std::memcpy(areas_[s].data(), x, std::min<std::size_t>(areas_[s].size(), it.count) * 4);
      }
    }
  }

  nanscope::SdkDeviceShape shape_;
  std::vector<std::array<std::uint8_t, nanscope::kSdkDeviceSlots>> rows_;
  std::array<nanscope::SdkSlotRecord, nanscope::kSdkDeviceSlots> records_{};
  std::array<std::vector<float>, nanscope::kSdkDeviceSlots> areas_;
  int step_ = -1, exec_ = 0;
  std::uint32_t begun_ = 0, status_ = 0, zero_ = 0;
};

nanscope::CudaPluginProbe probe() {
  return {1, "simulated device", "", "13.0"};
}

std::unique_ptr<nanscope::SdkDeviceChecks> make_sdk_device_checks() {
  return std::make_unique<Simulated>();
}

const nanscope::CudaPluginApi kApi{
    nanscope::kCudaPluginAbi, nanscope::kVersion, &nanscope::this_build_layout, &probe, nullptr,
    &make_sdk_device_checks};

}  // namespace

NANSCOPE_CUDA_PLUGIN_ENTRY(kApi)

extern "C" __attribute__((visibility("default"))) void nanscope_sim_capture(void* stream, int on) {
  if (on) {
    capturing_streams.insert(stream);
    graphs[stream].clear();
  } else {
    capturing_streams.erase(stream);
  }
}

extern "C" __attribute__((visibility("default"))) void nanscope_sim_replay(void* stream) {
  if (live) live->replay(stream);
}
