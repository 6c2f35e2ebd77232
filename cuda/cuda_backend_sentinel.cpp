// CudaBackend as the session's DeviceSentinel: the bank's step, the checks enqueued at the call
// sites, and the readbacks (the status word, a step's record, its per-slot detail, a fold's steps).
#include "cuda_backend_impl.h"

namespace nanscope::cuda {

void CudaBackend::begin_step(int step) {
  flush_checks();
  bank_.begin_step(step);
  bank_step_ = step;
  in_producer_ = 0;
}

void CudaBackend::check(int slot) {
  const std::uint64_t bit = std::uint64_t{1} << slot;
  if (in_producer_ & bit) {  // its producer checked it
    in_producer_ &= ~bit;
    return;
  }
  const DevBuf b = read_buf(slot);
  pending_checks_.push_back({slot, b.p, b.n, capture_area(slot), bank_.take_exec()});
}

SlotSink CudaBackend::producer_sink(int slot) {
  if (!observer_ || !observer_->producer_checks(slot)) return {};
  in_producer_ |= std::uint64_t{1} << slot;
  const DevBuf b = read_buf(slot);
  if (float* area = capture_area(slot)) late_captures_.push_back({slot, b.p, b.n, area});
  if (launch_log_) launch_log_->in_producers.push_back({slot, b.n});
  return bank_.sink(slot);
}

std::uint32_t CudaBackend::status_now() {
  flush_checks();
  std::uint32_t s = 0;
  download(&s, bank_.status_word(), 1);
  return s;
}

DeviceSentinel::StepReport CudaBackend::end_step() {
  flush_checks();
  StepStatusRecord h{};
  download(reinterpret_cast<unsigned char*>(&h),
           records_.get() + static_cast<std::size_t>(bank_step_) * sizeof h, sizeof h);
  losses_ = report_of(h).losses;
  return report_of(h);
}

DeviceSentinel::StepDetail CudaBackend::step_detail() {
  flush_checks();
  const BankReadback r = bank_.readback_step();
  d2h_ += 3;
  return detail_of(r, 0, bank_step_);
}

std::vector<std::pair<DeviceSentinel::StepReport, DeviceSentinel::StepDetail>>
CudaBackend::read_steps(int first, int last) {
  flush_checks();
  const std::size_t n = static_cast<std::size_t>(last - first + 1);
  std::vector<StepStatusRecord> recs(n);
  download(reinterpret_cast<unsigned char*>(recs.data()),
           records_.get() + static_cast<std::size_t>(first) * sizeof(StepStatusRecord),
           n * sizeof(StepStatusRecord));
  const BankReadback r = bank_.readback();  // records and history rows 0..last
  d2h_ += 3;
  take_context_table();
  std::vector<std::pair<StepReport, StepDetail>> out;
  for (int st = first; st <= last; ++st)
    out.emplace_back(report_of(recs[static_cast<std::size_t>(st - first)]), detail_of(r, st, st));
  if (!out.empty()) losses_ = out.back().first.losses;
  return out;
}

DeviceSentinel::StepReport CudaBackend::report_of(const StepStatusRecord& h) const {
  StepReport r;
  r.status = h.status;
  StepLosses& l = r.losses;
  l.c51 = h.scalars[kScC51];
  l.mse = h.scalars[kScMse];
  l.cql = h.scalars[kScCql];
  l.iqn = d_.iqn ? h.scalars[kScIqn] : 0.0;
  l.aux = h.scalars[kScAux];
  l.ens = h.scalars[kScEns];
  l.total = h.total;
  l.grad_norm = h.grad_norm;
  for (int g = 0; g < kGroupCount; ++g) l.group_norm[static_cast<std::size_t>(g)] = h.group_norm[g];
  return r;
}

DeviceSentinel::StepDetail CudaBackend::detail_of(const BankReadback& r, int row, int step) {
  StepDetail d;
  for (int s = 0; s < kSlotCount; ++s) {
    d.kinds[static_cast<std::size_t>(s)] =
        r.history[static_cast<std::size_t>(row)][static_cast<std::size_t>(s)];
    const auto& rec = r.records[static_cast<std::size_t>(s)];
    d.first_count[static_cast<std::size_t>(s)] = rec.first_step == step ? rec.count : -1;
  }
  return d;
}

}  // namespace nanscope::cuda
