// CudaBackend as its own CheckBank: the device bank's fold and step, the checks enqueued at the
// call sites (and the producers' own checks), and the readbacks that turn held steps into step
// outcomes: one status record per step while clean when the session needs each step, a fold's
// records and history at once otherwise (at its end, or every capture_areas_ steps when
// recording), the captured first-fire buffers and contexts with them.
#include "cuda_backend_impl.h"

namespace nanscope::cuda {

void CudaBackend::begin_fold(const SlotSetup& setup) {
  flush_checks();
  bank_.reset_fold();
  clear_contexts();
  held_.clear();
  setup_ = setup;
}

// A graph captured with the other checked set is not replayed (run_step compares the masks).
void CudaBackend::set_checked(int slot, bool on) {
  setup_.set_checked(slot, on);
}

void CudaBackend::set_capture(bool on) {
  capture_areas_ = enable_capture(on);
}

void CudaBackend::begin_step(const StepKey& key) {
  flush_checks();
  bank_.begin_step(key.step);
  bank_step_ = key.step;
  step_key_ = key;
  in_producer_ = 0;
  reserved_exec_.fill(-1);
}

void CudaBackend::check_site(int slot) {
  const std::uint64_t bit = std::uint64_t{1} << slot;
  if (in_producer_ & bit) {  // its producer checked it (and took its execution position)
    in_producer_ &= ~bit;
  } else if (setup_.checked(slot)) {
    const DevBuf b = read_buf(slot);
    pending_checks_.push_back({slot, b.p, b.n, capture_area(slot), site_exec(slot)});
    pending_measures_.push_back({slot, b});
  } else {
    site_exec(slot);
  }
  if (observer_) observer_->check(slot);
}

// The learner's health fields the watches ask for, enqueued with the fused check (the buffer stays
// as the site saw it until the update, like the fused check's).
void CudaBackend::measure_learner(int slot, const DevBuf& b, cudaStream_t stream) {
  const WatchConfig& w = c_.watch;
  if (w.c51_mass > 0 && (slot_info(slot).roles & kRoleC51Rows))
    bank_.measure_c51_rows(slot, b.p, b.n / static_cast<std::size_t>(d_.NA), d_.NA, stream);
  if (w.quantile_crossing > 0 && slot == kIqnQuantiles)
    bank_.measure_crossings(b.p, read_buf(kIqnTau).p, d_.B, d_.N, d_.A, stream);
}

SlotSink CudaBackend::producer_sink(int slot) {
  // With health on, the fused check measures every checked slot: the producers leave it to it.
  if (bank_.health() || !setup_.checked(slot) || (observer_ && observer_->overwrites(slot)))
    return {};
  in_producer_ |= std::uint64_t{1} << slot;
  const DevBuf b = read_buf(slot);
  if (float* area = capture_area(slot)) late_captures_.push_back({slot, b.p, b.n, area});
  if (launch_log_) launch_log_->in_producers.push_back({slot, b.n});
  return bank_.sink(slot, site_exec(slot));
}

std::vector<StepOutcome> CudaBackend::end_step() {
  flush_checks();
  held_.push_back(step_key_);
  // With capture on, the context areas bound how many steps may wait.
  if (report_each_ || (capture_areas_ > 0 && static_cast<int>(held_.size()) >= capture_areas_))
    return hand_over();
  return {};
}

std::vector<StepOutcome> CudaBackend::take_held() {
  return hand_over();
}

std::vector<StepOutcome> CudaBackend::hand_over() {
  flush_checks();
  std::vector<StepOutcome> out;
  if (held_.empty()) return out;
  const int first = held_.front().step;
  const std::size_t n = held_.size();
  std::vector<StepStatusRecord> recs(n);
  download(reinterpret_cast<unsigned char*>(recs.data()),
           records_.get() + static_cast<std::size_t>(first) * sizeof(StepStatusRecord),
           n * sizeof(StepStatusRecord));
  if (n == 1 && held_.front().step == bank_step_) {
    // The step just ended: its record says whether anything fired; only then its detail.
    out.push_back(outcome_of(held_.front(), recs[0]));
    if (recs[0].status != 0) {
      const BankReadback r = bank_.readback_step();
      d2h_ += 3;
      take_context_table();
      fill_fires(out.back(), r, 0);
    }
  } else {
    const BankReadback r = bank_.readback();  // records and history rows 0..last
    d2h_ += 3;
    take_context_table();
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(outcome_of(held_[i], recs[i]));
      fill_fires(out.back(), r, held_[i].step);
    }
  }
  held_.clear();
  losses_ = out.back().losses;
  return out;
}

StepOutcome CudaBackend::outcome_of(const StepKey& key, const StepStatusRecord& h) const {
  StepOutcome o;
  o.step = key.step;
  o.global_step = key.global_step;
  StepLosses& l = o.losses;
  l.c51 = h.scalars[kScC51];
  l.mse = h.scalars[kScMse];
  l.cql = h.scalars[kScCql];
  l.iqn = d_.iqn ? h.scalars[kScIqn] : 0.0;
  l.aux = h.scalars[kScAux];
  l.ens = h.scalars[kScEns];
  l.total = h.total;
  l.grad_norm = h.grad_norm;
  for (int g = 0; g < kGroupCount; ++g) {
    l.group_norm[static_cast<std::size_t>(g)] = h.group_norm[g];
    o.update_ratio[static_cast<std::size_t>(g)] = h.update_ratio[g];
  }
  for (int s = 0; s < kSlotCount; ++s)
    std::copy_n(h.health[s], kHealthFieldCount, o.health[static_cast<std::size_t>(s)].begin());
  // What the optimizer decided on the device, before the update ran (AdamGuard::updated).
  o.updated = h.updated != 0u;
  return o;
}

void CudaBackend::fill_fires(StepOutcome& o, const BankReadback& r, int row) {
  bool first_fire = false;
  for (int s = 0; s < kSlotCount; ++s) {
    const auto i = static_cast<std::size_t>(s);
    o.kinds[i] = r.history[static_cast<std::size_t>(row)][i];
    const DeviceSlotRecord& rec = r.records[i];
    if (rec.first_step != o.step || !o.kinds[i]) continue;
    o.first_count[i] = rec.count;
    o.first_exec[i] = rec.exec_position;
    first_fire = true;
  }
  if (!cap_ || !first_fire) return;
  // The buffers the fused checks (or the producers) copied at the fires, and the step's context
  // (its area found in the table the readback took).
  for (int s = 0; s < kSlotCount; ++s) {
    if (o.first_count[static_cast<std::size_t>(s)] < 0) continue;
    const SlotView v = captured_slot(s);
    const auto* p = static_cast<const float*>(v.data);
    CapturedSlot c{s, v.shape, std::vector<float>(p, p + v.count), {}};
    c.scan = scan_nonfinite(c.values.data(), c.values.size());
    o.captured.push_back(std::move(c));
  }
  StepContext ctx;
  if (captured_context(o.step, ctx.state, ctx.batch)) o.context = std::move(ctx);
}

}  // namespace nanscope::cuda
