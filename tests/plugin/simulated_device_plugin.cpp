// A CUDA plugin whose SDK device table simulates the device bank in host memory, so that the SDK
// session's device-path accounting (replays, folds, guard, captures) is tested where there is no
// GPU. It keeps DeviceBank's contract (cuda/sentinel_check.h): the step row counted at each begun
// step and capped at the last row, kinds ORed into rows and records, a record's first step, count
// and execution position set once per fold, the first fire's buffer copied into the copies' arena
// while it has room (whole float4s a copy; 16-bit values widened), the status word cleared at each
// step, a table of any width. "Device memory" is host memory here. A stream captures between
// nanscope_sim_capture(stream, 1) and (stream, 0): its begun steps and checks are recorded, and
// nanscope_sim_replay(stream) runs them, as a graph launch would.
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "core/half_float.h"
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
    rows_.assign(static_cast<std::size_t>(shape.rows) * width(), 0);
    records_.assign(width(), {});
    begin_fold();
  }
  void begin_fold() override {
    records_.assign(width(), {});
    rows_.assign(rows_.size(), 0);
    copies_.clear();
    arena_used_ = 0;
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
    r.slots = shape_.slots;
    const std::size_t used = std::min<std::size_t>(begun_, static_cast<std::size_t>(shape_.rows));
    r.rows.assign(rows_.begin(), rows_.begin() + static_cast<std::ptrdiff_t>(used * width()));
    r.records = records_;
    if (shape_.health) r.health.assign(width() * nanscope::kHealthFieldCount, NAN);
    std::fill_n(rows_.begin(), used * width(), 0);
    step_ = -1;
    begun_ = 0;
    return r;
  }
  std::vector<float> captured(int slot, std::uint64_t count) override {
    const auto c = copies_.find(slot);
    if (c == copies_.end() || c->second.size() != count) return {};
    return c->second;
  }
  std::vector<float> copy_out(void*, std::uint64_t address, std::uint64_t count) override {
    const auto* p = reinterpret_cast<const float*>(static_cast<std::uintptr_t>(address));
    return std::vector<float>(p, p + count);
  }
  double read_value(void*, std::uint64_t address, nanscope::ElementType type) override {
    return at(SdkDeviceItem{0, address, 1, type}, 0);
  }
  std::string device_name() override { return "simulated device"; }
  std::uint64_t status_word() override { return reinterpret_cast<std::uintptr_t>(&status_); }
  std::uint64_t zero_word() override { return reinterpret_cast<std::uintptr_t>(&zero_); }

  void replay(void* stream) {
    for (const Op& op : graphs[stream]) op.begin ? run_begin() : run_check(op.items);
  }

 private:
  void run_begin() {
    step_ = std::min(step_ + 1, shape_.rows - 1);
    ++begun_;
    status_ = 0;
    exec_ = 0;
  }
  void run_check(const std::vector<SdkDeviceItem>& items) {
    for (const SdkDeviceItem& it : items) {
      std::uint8_t kinds = 0;
      std::int64_t count = 0;
      for (std::uint64_t i = 0; i < it.count; ++i) {
        const double v = at(it, i);
        const std::uint8_t k = std::isnan(v) ? 1 : std::isinf(v) ? (v > 0 ? 2 : 4) : 0;
        kinds |= k;
        count += k != 0;
      }
      const int exec = exec_++;
      if (!kinds) continue;
      const auto s = static_cast<std::size_t>(it.slot);
      rows_[static_cast<std::size_t>(step_) * width() + s] |= kinds;
      status_ |= kinds;
      nanscope::SdkSlotRecord& rec = records_[s];
      rec.kinds |= kinds;
      if (rec.first_step < 0) {
        rec = {rec.kinds, step_, count, exec};
        const std::uint64_t taken = arena_used_;
        arena_used_ += (it.count + 3) / 4 * 4;
        if (taken + it.count <= shape_.capture_floats) {
          std::vector<float>& copy = copies_[it.slot];
          copy.resize(it.count);
          for (std::uint64_t i = 0; i < it.count; ++i) copy[i] = static_cast<float>(at(it, i));
        }
      }
    }
  }

  // Value i of an item's buffer, widened as the device path widens it.
  static double at(const SdkDeviceItem& it, std::uint64_t i) {
    const void* p = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(it.address));
    switch (it.type) {
      case nanscope::ElementType::BFloat16:
        return static_cast<float>(static_cast<const nanscope::BFloat16*>(p)[i]);
      case nanscope::ElementType::Float16:
        return static_cast<float>(static_cast<const nanscope::Float16*>(p)[i]);
      case nanscope::ElementType::Float64:
        return static_cast<const double*>(p)[i];
      case nanscope::ElementType::Float32:
        break;
    }
    return static_cast<const float*>(p)[i];
  }

  nanscope::SdkDeviceShape shape_;
  std::size_t width() const { return static_cast<std::size_t>(shape_.slots); }

  std::vector<std::uint8_t> rows_;  // [rows, slots]
  std::vector<nanscope::SdkSlotRecord> records_;
  std::map<int, std::vector<float>> copies_;  // the first fires' copies in the arena
  std::uint64_t arena_used_ = 0;
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
