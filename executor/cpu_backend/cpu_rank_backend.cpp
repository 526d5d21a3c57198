// executor/cpu_backend/cpu_rank_backend.cpp — the CPU reference backend (see cpu_rank_backend.h).
#include "executor/cpu_backend/cpu_rank_backend.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cpu/fp16.h"
#include "executor/model/initial_state.h"
#include "executor/model/rank_fsdp_units.h"

namespace fsdpx {

CpuRankBackend::CpuRankBackend(const RuntimeProgram& rp, std::unique_ptr<Communicator> world,
                               OpProfiler* kernel_profiler)
    : ModelSkeleton(rp, std::move(world)), model_comm_(nullptr, nullptr, kernel_profiler),
      lora_(rp.settings.lora ? std::make_unique<const LoraLayout>(make_lora_layout(rp.settings.model, *rp.settings.lora))
                             : nullptr),
      models_(rp.settings.model, rp.settings.training.micro_batch, rp.settings.training.seq,
              model_options(rp, role_, par_, &model_comm_, kernel_profiler, lora_.get())) {
  if (lora_) {
    const auto n = std::size_t(lora_->total);
    adapters_ = AdapterState{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
    adapter_grads_.assign(n, 0.0f);
    mem_.alloc(MemCategory::params, double(n) * 4);
    mem_.alloc(MemCategory::grads, double(n) * 4);
    mem_.alloc(MemCategory::optimizer, double(n) * 8);
  }
  const HostUnitDevice host{rp.settings.precision.param == DType::fp16};
  units_ = make_rank_units(rp, world_->rank(), role_, par_, DType::fp32, &mem_, host);  // fp32 reductions here
  message_.resize(std::size_t(pipeline_message_numel(rp, par_)));
}

// The shared initial states (model/rank_fsdp_units.h) through the loading hooks.
void CpuRankBackend::init_params(std::uint64_t seed) {
  load_initial_states(rp_, par_, units_, seed, [&](FsdpUnit& u, const UnitShardState& s) { load_unit(u, s); });
  if (lora_) load_adapter_state(initial_adapter_state(*lora_, seed));
}

void CpuRankBackend::load_adapter_state(const AdapterState& s) {
  FSDP_CHECK(lora_ && s.params.size() == adapters_.params.size() && s.exp_avg.size() == s.params.size() &&
                 s.exp_avg_sq.size() == s.params.size(),
             "CpuRankBackend: adapter state of another layout");
  adapters_ = s;
}

// Activations enter before the segment's first module, their gradient w.r.t. its last module's output.
void CpuRankBackend::recv(Payload payload, int segment, int mb, int peer, int tag) {
  const Segment& seg = segment_at(segment);
  world_->recv(message_.data(), std::int64_t(message_.size()), peer, tag);
  Model& model = models_.at(mb);
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

void CpuRankBackend::adamw_adapters(const OptimizerSettings& o, const AdamWStep& s) {
  adamw_update(o, s, adapters_.params.data(), adapters_.exp_avg.data(), adapters_.exp_avg_sq.data(),
               adapter_grads_.data(), std::int64_t(adapters_.params.size()));
}

void CpuRankBackend::round_to_fp16(float* g, std::int64_t n) { cpu::round_to_fp16(g, n); }

void CpuRankBackend::unscale_shard(float* g, std::int64_t n, float inv_scale) {
  found_inf_ = cpu::unscale_and_check(g, n, inv_scale) || found_inf_;
}

void CpuRankBackend::add_sum_squares(const float* g, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) sq_sum_ += double(g[i]) * double(g[i]);
}

void CpuRankBackend::flag_non_finite(float* g, std::int64_t n, int unit) {
  if (std::any_of(g, g + n, [](float x) { return !std::isfinite(x); })) note_non_finite(unit);
}

}  // namespace fsdpx
