// executor/cpu_backend/cpu_rank_backend.cpp — the CPU reference backend (see cpu_rank_backend.h).
#include "executor/cpu_backend/cpu_rank_backend.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cpu/fp16.h"
#include "executor/model/init.h"

namespace fsdpx {

namespace {

ModelOptions model_options(const StepProgram& program, OpProfiler* profiler, const ModelParallel& par, ModelComm* comm,
                           const LoraLayout* lora, bool fp8) {
  ModelOptions o;
  o.lora = lora;
  o.fp8 = fp8;
  o.recompute = program.recompute;
  o.profiler = profiler;
  o.parallel = par;
  o.comm = comm;
  return o;
}

// [begin, end) ranges of shard [first, first + count) of a unit (in shard coordinates) that hold
// tensors every tp rank holds whole.
std::vector<std::pair<std::int64_t, std::int64_t>> replicated_ranges(const ParamLayout& layout, const FlatUnitLayout& f,
                                                                     std::int64_t first, std::int64_t count) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::size_t k = 0; k < f.modules.size(); ++k)
    for (const TensorSlot& t : layout.modules[std::size_t(f.modules[k])].tensors) {
      if (!t.tp_replicated) continue;
      const std::int64_t begin = std::max(first, f.module_offsets[k] + t.offset);
      const std::int64_t end = std::min(first + count, f.module_offsets[k] + t.offset + t.numel());
      if (begin < end) out.emplace_back(begin - first, end - first);
    }
  return out;
}

}  // namespace

CpuRankBackend::CpuRankBackend(const RuntimeProgram& rp, std::unique_ptr<Communicator> world,
                               OpProfiler* kernel_profiler)
    : RankSkeleton(rp, std::move(world)), model_comm_(nullptr, nullptr, kernel_profiler),
      lora_(rp.settings.lora ? std::make_unique<const LoraLayout>(make_lora_layout(rp.settings.model, *rp.settings.lora))
                             : nullptr),
      models_(rp.settings.model, rp.settings.training.micro_batch, rp.settings.training.seq,
              model_options(rp.program, kernel_profiler, par_, &model_comm_, lora_.get(), rp.settings.fp8.has_value())) {
  if (lora_) {
    const auto n = std::size_t(lora_->total);
    adapters_ = AdapterState{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
    adapter_grads_.assign(n, 0.0f);
    mem_.alloc(MemCategory::params, double(n) * 4);
    mem_.alloc(MemCategory::grads, double(n) * 4);
    mem_.alloc(MemCategory::optimizer, double(n) * 8);
  }
  const RankShard at = rank_shard(rp, world_->rank());
  const int unit_shard = at.unit_shard;
  const ParamLayout& local = rp.tp_layouts[std::size_t(par_.tp_rank)];
  units_ = RankUnits<FsdpUnit>(rp, role_, [&](int u) {
    return std::make_unique<FsdpUnit>(rp.flats[std::size_t(u)], unit_shard, replicated_params(rp, u), &mem_);
  });
  for (const FlatUnitLayout& f : rp.flats)
    replicated_ranges_.push_back(replicated_ranges(local, f, std::int64_t(unit_shard) * f.shard_numel, f.shard_numel));
  for (FsdpUnit* u : units_.all()) u->set_fp16(rp.settings.precision.param == DType::fp16);
  segment_bytes_ = cpu_segment_buffer_bytes(rp, local, par_);
  const RunSettings& run = rp.settings;
  message_.resize(std::size_t(run.training.micro_batch * run.training.seq * run.model.hidden));
}

void CpuRankBackend::init_params(std::uint64_t seed) {
  // The copy of a tied table has the embedding unit's layout, so it starts with the same values.
  for (FsdpUnit* u : units_.all()) {
    UnitShardState& s = u->state();
    init_unit_range(rp_.tp_layouts[std::size_t(par_.tp_rank)], u->flat(), seed, s.shard_offset,
                    s.shard_offset + u->flat().shard_numel, s.params.data());
    std::fill(s.exp_avg.begin(), s.exp_avg.end(), 0.0f);
    std::fill(s.exp_avg_sq.begin(), s.exp_avg_sq.end(), 0.0f);
  }
  if (!lora_) return;
  init_lora(*lora_, seed, adapters_.params.data());
  std::fill(adapters_.exp_avg.begin(), adapters_.exp_avg.end(), 0.0f);
  std::fill(adapters_.exp_avg_sq.begin(), adapters_.exp_avg_sq.end(), 0.0f);
}

void CpuRankBackend::load_adapter_state(const AdapterState& s) {
  FSDP_CHECK(lora_ && s.params.size() == adapters_.params.size() && s.exp_avg.size() == s.params.size() &&
                 s.exp_avg_sq.size() == s.params.size(),
             "CpuRankBackend: adapter state of another layout");
  adapters_ = s;
}

void CpuRankBackend::all_reduce_adapter_grads(MeshGroup group) {
  FSDP_CHECK(lora_ != nullptr, "CpuRankBackend: an adapter reduction without LoRA");
  // fp16 plans: the adapters' gradients leave their GEMMs in fp16 as the base units' do (FsdpUnit), so an
  // overflowing loss scale shows here too.
  if (rp_.settings.precision.param == DType::fp16)
    cpu::round_to_fp16(adapter_grads_.data(), std::int64_t(adapter_grads_.size()));
  comm(group).all_reduce(adapter_grads_.data(), std::int64_t(adapter_grads_.size()));
  for (float g : adapter_grads_)
    if (!std::isfinite(g)) {
      if (first_non_finite_unit_ < 0) first_non_finite_unit_ = 0;  // reported against the first unit
      break;
    }
}

double CpuRankBackend::adapter_grad_sq_sum() {
  double sum = 0;
  for (float g : adapter_grads_) sum += double(g) * double(g);
  return sum;
}

void CpuRankBackend::gather_unit(FsdpUnit& u, Communicator& c, bool from_kept) {
  if (from_kept)
    u.gather_kept(c);
  else
    u.gather(c);
}

void CpuRankBackend::reduce_unit(FsdpUnit& u, UnitReduction r, Communicator& c) {
  switch (r) {
    case UnitReduction::scatter: u.reduce_scatter(c); break;
    case UnitReduction::reduced: u.all_reduce_reduced(c); break;
    case UnitReduction::full: u.all_reduce_full(c); break;
  }
}

void CpuRankBackend::set_micro_batch(int mb, const std::int32_t* tokens, const std::int32_t* targets) {
  models_.at(mb).set_batch(tokens, targets);
}

void CpuRankBackend::forward(int segment, int mb) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  Transformer<float>& model = models_.at(mb);
  if (lora_) model.set_lora_buffers(adapters_.params.data(), adapter_grads_.data());
  const std::vector<const float*> p = units_.live_params(rp_.layout.num_modules());
  for (int m = seg.first_module; m < seg.first_module + seg.module_count; ++m) model.forward_module(m, p);
  models_.forward_done(mb);
  mem_.alloc(MemCategory::activations, segment_bytes_[std::size_t(segment)].saved);
  if (seg.first_module + seg.module_count - 1 == rp_.layout.head_index()) losses_.push_back(double(model.loss()));
}

void CpuRankBackend::backward(int segment, int unit, int mb) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const SegmentBufferBytes& bytes = segment_bytes_[std::size_t(segment)];
  mem_.alloc(MemCategory::transient, bytes.working);
  Transformer<float>& model = models_.at(mb);
  const std::vector<const float*> p = units_.live_params(rp_.layout.num_modules());
  const std::vector<float*> g = grad_ptrs(unit);
  for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m) model.backward_module(m, p, g);
  models_.backward_done(mb);
  mem_.free(MemCategory::transient, bytes.working);
  mem_.free(MemCategory::activations, bytes.saved);
}

// Zero bubble's B: the activations W reads stay in the model, so they are counted until W.
void CpuRankBackend::backward_input(int segment, int mb) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const SegmentBufferBytes& bytes = segment_bytes_[std::size_t(segment)];
  mem_.alloc(MemCategory::transient, bytes.working);
  Transformer<float>& model = models_.at(mb);
  const std::vector<const float*> p = units_.live_params(rp_.layout.num_modules());
  for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m) model.backward_input_module(m, p);
  mem_.free(MemCategory::transient, bytes.working);
  mem_.alloc(MemCategory::activations, bytes.weight_pass);
}

void CpuRankBackend::backward_weight(int segment, int unit, int mb) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const SegmentBufferBytes& bytes = segment_bytes_[std::size_t(segment)];
  Transformer<float>& model = models_.at(mb);
  const std::vector<float*> g = grad_ptrs(unit);
  for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m) model.backward_weight_module(m, g);
  models_.backward_done(mb);
  mem_.free(MemCategory::activations, bytes.saved + bytes.weight_pass);
}

// Activations leave after the segment's last module and enter before its first; their gradient leaves
// w.r.t. the segment's input and enters w.r.t. its output. A finished micro-batch's model stays readable
// for the send of its input gradient (micro_batch_models.h).
void CpuRankBackend::send(Payload payload, int segment, int mb, int peer, int tag) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const float* data = outbound_message(models_.get(mb), seg, payload);
  world_->post_send(data, std::int64_t(message_.size()), peer, tag);
}

void CpuRankBackend::recv(Payload payload, int segment, int mb, int peer, int tag) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  world_->recv(message_.data(), std::int64_t(message_.size()), peer, tag);
  Transformer<float>& model = models_.at(mb);
  if (payload == Payload::activations)
    model.set_input(seg.first_module, message_.data());
  else
    model.set_output_grad(seg.first_module + seg.module_count - 1, message_.data());
}

std::vector<double> CpuRankBackend::take_losses() {
  std::vector<double> out;
  out.swap(losses_);
  return out;
}

void CpuRankBackend::finish_reduction(int unit) {
  bool finite = true;
  for (FsdpUnit* u : units_.with_copy(unit)) finite = u->finish_reduction() && finite;
  if (!finite && first_non_finite_unit_ < 0) first_non_finite_unit_ = unit;
}

// The copy of a tied table is counted once, on the first stage.
double CpuRankBackend::grad_sq_sum() {
  double sum = 0;
  for (std::size_t u = 0; u < rp_.flats.size(); ++u) {
    if (!units_.owns(int(u))) continue;
    const std::vector<float>& g = units_.own(int(u)).grad_shard();
    const auto& skip = replicated_ranges_[u];  // counted on tp rank 0 only
    std::size_t k = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      while (k < skip.size() && std::int64_t(i) >= skip[k].second) ++k;
      if (par_.tp_rank > 0 && k < skip.size() && std::int64_t(i) >= skip[k].first) continue;
      sum += double(g[i]) * double(g[i]);
    }
  }
  return sum;
}

void CpuRankBackend::adamw(const OptimizerSettings& o, const AdamWStep& s) {
  if (lora_) {  // the base is frozen: only the adapters step
    adamw_update(o, s, adapters_.params.data(), adapters_.exp_avg.data(), adapters_.exp_avg_sq.data(),
                 adapter_grads_.data(), std::int64_t(adapters_.params.size()));
    return;
  }
  for (FsdpUnit* u : units_.all()) {
    UnitShardState& st = u->state();
    adamw_update(o, s, st.params.data(), st.exp_avg.data(), st.exp_avg_sq.data(), u->grad_shard().data(),
                 std::int64_t(st.params.size()));
  }
}

bool CpuRankBackend::unscale_grads(float inv_scale) {
  bool found_inf = false;
  for (FsdpUnit* u : units_.all()) {
    std::vector<float>& g = u->grad_shard();
    found_inf = cpu::unscale_and_check(g.data(), std::int64_t(g.size()), inv_scale) || found_inf;
  }
  // LoRA adapters: whole on every rank, summed by their all-reduce before this op.
  found_inf = cpu::unscale_and_check(adapter_grads_.data(), std::int64_t(adapter_grads_.size()), inv_scale) || found_inf;
  return found_inf;
}

void CpuRankBackend::zero_grad_shards() {
  for (FsdpUnit* u : units_.all()) u->zero_grad_shard();
  std::fill(adapter_grads_.begin(), adapter_grads_.end(), 0.0f);
  first_non_finite_unit_ = -1;
}

}  // namespace fsdpx
