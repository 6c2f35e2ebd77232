#include "cuda_check_bank.h"

#include <algorithm>

#include "core/slot_table.h"

namespace nanscope::cuda {

namespace {
// Context areas: as many as fit in this budget, between 2 and 16 (the session reads back at least
// every that many steps).
constexpr std::size_t kContextBudgetBytes = std::size_t{1} << 30;
}  // namespace

// First-fire capture: each slot's buffer at its first fire in the fold (copied by the fused check
// or after its producer), the state the update started from (the optimizer's shadow), and the
// context areas a step with a first fire sends that state, the target, the batch and the draws to.
struct CudaCheckBank::Capture {
  std::array<DeviceArray<float>, kBuiltinSlotCount> slots;
  DeviceArray<float> shadow_params, shadow_adam;
  DeviceArray<std::int64_t> shadow_t{1};
  std::unique_ptr<ContextCapture> contexts;
  std::vector<int> steps;  // the step each context area holds, from the last readback
};

CudaCheckBank::CudaCheckBank(const Config& c, const Dims& d, CheckBankHost& host,
                             cudaStream_t stream)
    : c_(c),
      d_(d),
      host_(host),
      bank_(c.run.steps_per_fold, stream, c.sentinel.health),
      records_(static_cast<std::size_t>(c.run.steps_per_fold) * sizeof(StepStatusRecord)),
      updated_(1),
      setup_(slot_setup(c)) {
  reserved_exec_.fill(-1);
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(records_.get(), 0, records_.size(), stream));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(updated_.get(), 0, sizeof(std::uint32_t), stream));
}

CudaCheckBank::~CudaCheckBank() = default;

void CudaCheckBank::begin_fold(const SlotSetup& setup) {
  flush();
  bank_.reset_fold();
  if (cap_) cap_->contexts->clear();
  held_.clear();
  setup_ = setup;
}

void CudaCheckBank::set_capture(bool on) {
  flush();
  host_.capture_changed();  // the step's graph gains or loses the capture's work
  if (!on) {
    cap_.reset();
    capture_areas_ = 0;
    return;
  }
  auto c = std::make_unique<Capture>();
  for (int s = 0; s < kBuiltinSlotCount; ++s)
    if (const DevBuf b = host_.check_buffer(s); b.p)
      c->slots[static_cast<std::size_t>(s)] = DeviceArray<float>(b.n);
  const std::size_t n = host_.param_count();
  c->shadow_params = DeviceArray<float>(n);
  c->shadow_adam = DeviceArray<float>(2 * n);
  const cudaStream_t s = bank_.stream();
  // The layout's padding is never written: zero, as the live arrays' is.
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(c->shadow_params.get(), 0, n * sizeof(float), s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(c->shadow_adam.get(), 0, 2 * n * sizeof(float), s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(c->shadow_t.get(), 0, sizeof(std::int64_t), s));
  const std::vector<ContextCapture::Source> src =
      host_.context_sources({c->shadow_params.get(), c->shadow_adam.get(), c->shadow_t.get()});
  std::size_t bytes = 0;
  for (const auto& x : src) bytes += x.bytes;
  const int areas = static_cast<int>(std::clamp<std::size_t>(kContextBudgetBytes / bytes, 2, 16));
  c->contexts = std::make_unique<ContextCapture>(src, areas, s);
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  cap_ = std::move(c);
  capture_areas_ = areas;
}

void CudaCheckBank::begin_step(const StepKey& key) {
  flush();
  bank_.begin_step(key.step);
  step_ = key;
  in_producer_ = 0;
  reserved_exec_.fill(-1);
}

void CudaCheckBank::check_site(int slot) {
  const std::uint64_t bit = std::uint64_t{1} << slot;
  if (in_producer_ & bit) {  // its producer checked it (and took its execution position)
    in_producer_ &= ~bit;
  } else if (setup_.checked(slot)) {
    const DevBuf b = host_.check_buffer(slot);
    due_.push_back({slot, b.p, b.n, capture_area(slot), site_exec(slot)});
    measures_.push_back({slot, b});
  } else {
    site_exec(slot);
  }
  host_.observe_check(slot);
}

int CudaCheckBank::site_exec(int slot) {
  int& r = reserved_exec_[static_cast<std::size_t>(slot)];
  const int e = r >= 0 ? r : bank_.take_exec();
  r = -1;
  return e;
}

SlotSink CudaCheckBank::producer_sink(int slot) {
  if (bank_.health() || !setup_.checked(slot) || host_.host_writes(slot)) return {};
  in_producer_ |= std::uint64_t{1} << slot;
  const DevBuf b = host_.check_buffer(slot);
  if (float* area = capture_area(slot)) late_captures_.push_back({slot, b.p, b.n, area});
  if (launch_log_) launch_log_->in_producers.push_back({slot, b.n});
  return bank_.sink(slot, site_exec(slot));
}

void CudaCheckBank::flush(cudaStream_t stream) {
  for (const auto& [slot, buf] : measures_) measure_learner(slot, buf, stream);
  measures_.clear();
  if (due_.empty()) return;
  std::vector<DeviceBank::GroupItem> due;
  due.swap(due_);
  if (launch_log_) {
    launch_log_->launches.emplace_back();
    for (const auto& it : due) launch_log_->launches.back().push_back({it.slot, it.count});
  }
  bank_.check_group(due, stream);
}

std::vector<DeviceBank::GroupItem> CudaCheckBank::take_due(int slot) {
  std::vector<DeviceBank::GroupItem> taken;
  const auto it =
      std::find_if(due_.begin(), due_.end(), [&](const auto& i) { return i.slot == slot; });
  if (it != due_.end()) {
    taken.push_back(*it);
    due_.erase(it);
  }
  return taken;
}

void CudaCheckBank::put_back_first(const std::vector<DeviceBank::GroupItem>& items) {
  due_.insert(due_.begin(), items.begin(), items.end());
}

void CudaCheckBank::copy_late_captures() {
  bank_.copy_first_fires(late_captures_);
  late_captures_.clear();
}

void CudaCheckBank::drop_due() {
  due_.clear();
  measures_.clear();
  late_captures_.clear();
  in_producer_ = 0;
  reserved_exec_.fill(-1);
}

// The learner's health fields the watches ask for, enqueued with the fused check (the buffer stays
// as the site saw it until the update, like the fused check's).
void CudaCheckBank::measure_learner(int slot, const DevBuf& b, cudaStream_t stream) {
  const WatchConfig& w = c_.watch;
  if (w.c51_mass > 0 && (builtin_slot(slot).roles & kRoleC51Rows))
    bank_.measure_c51_rows(slot, b.p, b.n / static_cast<std::size_t>(d_.NA), d_.NA, stream);
  if (w.quantile_crossing > 0 && (builtin_slot(slot).roles & kRoleQuantiles))
    bank_.measure_crossings(b.p, host_.check_buffer(kIqnTau).p, d_.B, d_.N, d_.A, stream);
}

float* CudaCheckBank::capture_area(int slot) {
  return cap_ ? cap_->slots[static_cast<std::size_t>(slot)].get() : nullptr;
}

AdamShadow CudaCheckBank::optimizer_shadow() {
  if (!cap_) return {};
  return {cap_->shadow_params.get(), cap_->shadow_adam.get(), cap_->shadow_t.get()};
}

void CudaCheckBank::capture_context() {
  if (cap_) cap_->contexts->capture_if_fired(bank_.first_fire_word(), bank_.step_word());
}

void CudaCheckBank::pack_record(const double* scalars, const float* total, const float* norms,
                                const StepHealthIn& health, cudaStream_t stream) {
  pack_step_record(bank_.status_word(), updated_.get(), scalars, total, norms, bank_.step_word(),
                   reinterpret_cast<StepStatusRecord*>(records_.get()), health, stream);
}

std::vector<StepOutcome> CudaCheckBank::end_step() {
  flush();
  held_.push_back(step_);
  // With capture on, the context areas bound how many steps may wait.
  if (report_each_ || (capture_areas_ > 0 && static_cast<int>(held_.size()) >= capture_areas_))
    return hand_over();
  return {};
}

// The held steps' outcomes: the one step just ended from its record (one copy while clean), or
// several from the fold's records and history (a few copies for all of them).
std::vector<StepOutcome> CudaCheckBank::hand_over() {
  flush();
  std::vector<StepOutcome> out;
  if (held_.empty()) return out;
  const int first = held_.front().step;
  const std::size_t n = held_.size();
  std::vector<StepStatusRecord> recs(n);
  host_.download_bytes(recs.data(),
                       records_.get() + static_cast<std::size_t>(first) * sizeof(StepStatusRecord),
                       n * sizeof(StepStatusRecord));
  if (n == 1 && held_.front().step == step_.step) {
    // The step just ended: its record says whether anything fired; only then its detail.
    out.push_back(host_.outcome_of(held_.front(), recs[0]));
    if (recs[0].status != 0) {
      const BankReadback r = bank_.readback_step();
      host_.count_copies(r.copies);
      take_context_table();
      fill_fires(out.back(), r, 0);
    }
  } else {
    const BankReadback r = bank_.readback();  // records and history rows 0..last
    host_.count_copies(r.copies);
    take_context_table();
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(host_.outcome_of(held_[i], recs[i]));
      fill_fires(out.back(), r, held_[i].step);
    }
  }
  held_.clear();
  losses_ = out.back().losses;
  return out;
}

void CudaCheckBank::take_context_table() {
  if (!cap_) return;
  cap_->steps = cap_->contexts->take_table();
  host_.count_copies(1);
}

// A step's kinds, first fires and (with capture) captured buffers and context, from a readback
// whose history row `row` is the step's.
void CudaCheckBank::fill_fires(StepOutcome& o, const BankReadback& r, int row) {
  bool first_fire = false;
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    const auto i = static_cast<std::size_t>(s);
    o.kinds[i] = r.kinds(static_cast<std::size_t>(row), s);
    const DeviceSlotRecord& rec = r.records[i];
    if (rec.first_step != o.step || !o.kinds[i]) continue;
    o.first_count[i] = rec.count;
    o.first_exec[i] = rec.exec_position;
    first_fire = true;
  }
  if (!cap_ || !first_fire) return;
  // The buffers the fused checks (or the producers) copied at the fires, and the step's context
  // (its area found in the table the readback took).
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    if (o.first_count[static_cast<std::size_t>(s)] < 0) continue;
    const DeviceArray<float>& a = cap_->slots[static_cast<std::size_t>(s)];
    if (!a.get()) continue;
    const SlotView v = host_.view_of(s, a.get(), a.size());
    const auto* p = static_cast<const float*>(v.data);
    CapturedSlot c{s, v.shape, std::vector<float>(p, p + v.count), {}, {}};
    c.scan = scan_nonfinite(c.values.data(), c.values.size());
    o.captured.push_back(std::move(c));
  }
  const auto& steps = cap_->steps;
  const auto at = std::find(steps.begin(), steps.end(), o.step);
  if (at == steps.end()) return;
  const int area = static_cast<int>(at - steps.begin());
  StepContext ctx;
  // The area holds the arrays as the live ones are laid out: the host's readers serve.
  host_.read_context([&](int source) { return cap_->contexts->address(area, source); }, ctx.state,
                     ctx.batch);
  o.context = std::move(ctx);
}

}  // namespace nanscope::cuda
