// executor/runtime/rank_runtime.cpp — the per-rank op interpreter (see rank_runtime.h).
#include "executor/runtime/rank_runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "executor/model/init.h"
#include "executor/runtime/adamw.h"
#include "executor/runtime/lr_schedule.h"

namespace fsdpx {

namespace {

ModelOptions model_options(const Plan& plan, OpProfiler* profiler) {
  ModelOptions o;
  o.recompute = plan.recompute;
  o.profiler = profiler;
  return o;
}

}  // namespace

RankRuntime::RankRuntime(const RuntimeProgram& rp, std::unique_ptr<Communicator> world, const TrainerOptions& options,
                         OpProfiler* kernel_profiler)
    : rp_(rp), world_(std::move(world)), options_(options),
      model_(rp.plan.model, rp.plan.training.micro_batch, rp.plan.training.seq, model_options(rp.plan, kernel_profiler)) {
  // Mesh (dp_replicate, dp_shard, cp, tp), row-major (step_program.h Mesh); tp = cp = 1 here.
  dp_rank_ = world_->rank();
  shard_index_ = dp_rank_ % rp.plan.parallelism.dp_shard;
  replica_index_ = dp_rank_ / rp.plan.parallelism.dp_shard;
  const int unit_shard = rp.shard_count > 1 ? shard_index_ : 0;
  for (const FlatUnitLayout& f : rp.flats) units_.emplace_back(f, unit_shard, rp.replicated, &mem_);
}

void RankRuntime::connect() {
  shard_comm_ = world_->split(replica_index_, shard_index_);
  replica_comm_ = world_->split(shard_index_, replica_index_);
}

void RankRuntime::init_params(std::uint64_t seed) {
  for (FsdpUnit& u : units_) {
    UnitShardState& s = u.state();
    init_unit_range(rp_.layout, u.flat(), seed, s.shard_offset, s.shard_offset + u.flat().shard_numel, s.params.data());
    std::fill(s.exp_avg.begin(), s.exp_avg.end(), 0.0f);
    std::fill(s.exp_avg_sq.begin(), s.exp_avg_sq.end(), 0.0f);
  }
  copy_masters_to_replicas();
}

void RankRuntime::copy_masters_to_replicas() {
  if (rp_.plan.parallelism.data_parallel != DataParallel::ddp) return;
  for (FsdpUnit& u : units_) u.copy_master_to_replica();
}

Communicator& RankRuntime::comm_for(int group) {
  switch (rp_.program.groups[std::size_t(group)].kind) {
    case GroupKind::dp_shard:
    case GroupKind::reshard: return *shard_comm_;  // a reshard group gathers the same values (see free ops)
    case GroupKind::dp_replicate: return *replica_comm_;
    case GroupKind::dp_all: return *world_;
    case GroupKind::tp:
    case GroupKind::cp: break;
  }
  FSDP_CHECK(false, "RankRuntime: tp/cp groups are rejected before lowering");
  return *world_;
}

RankStepResult RankRuntime::run_step(std::int64_t step, const DataPosition& pos, DataSource& data, std::mutex& data_mu) {
  const TrainingSettings& t = rp_.plan.training;
  step_ = step;
  result_ = RankStepResult{};
  non_finite_ = norm_done_ = false;
  {
    std::lock_guard<std::mutex> lock(data_mu);
    data.global_batch(pos, t.global_batch, t.seq, batch_);
  }
  if (std::int64_t(batch_.size()) != t.global_batch * (t.seq + 1))
    throw std::runtime_error(fmt::format("data source {}: {} tokens for a batch of {} × {}", data.describe(),
                                         batch_.size(), t.global_batch, t.seq + 1));
  const auto& ops = rp_.program.roles[0].ops;
  for (int id = 0; id < int(ops.size()); ++id) {
    const auto start = std::chrono::steady_clock::now();
    run_op(ops[std::size_t(id)], id);
    if (options_.profile) {
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
      op_time_s_[ops[std::size_t(id)].name] += dt.count();
    }
  }
  return result_;
}

void RankRuntime::run_op(const Op& op, int id) {
  switch (op.kind) {
    case OpKind::all_gather:
      if (rp_.program.groups[std::size_t(op.group)].kind == GroupKind::reshard) units_[std::size_t(op.unit)].drop_kept_copy();
      units_[std::size_t(op.unit)].gather(comm_for(op.group));
      break;
    case OpKind::forward: forward(op); break;
    case OpKind::backward: backward(op); break;
    case OpKind::free: {
      FsdpUnit& u = units_[std::size_t(op.unit)];
      // Lowered only for reshard_after_forward = g with 1 < g < dp_shard: a copy sharded over g ranks stays.
      const int g = rp_.plan.units[std::size_t(op.unit)].reshard_after_forward;
      u.release_params(double(u.flat().padded_numel) * 4.0 / g);
      break;
    }
    case OpKind::reduce_scatter:
      units_[std::size_t(op.unit)].reduce_scatter(comm_for(op.group));
      if (!rp_.replica_reduce[std::size_t(id)]) finish_reduction(op.unit);
      break;
    case OpKind::all_reduce:
      if (op.unit < 0) {
        reduce_norm();  // clip.ar
      } else if (rp_.program.groups[std::size_t(op.group)].kind == GroupKind::dp_replicate) {
        units_[std::size_t(op.unit)].all_reduce_reduced(comm_for(op.group));  // HSDP
        finish_reduction(op.unit);
      } else {
        units_[std::size_t(op.unit)].all_reduce_full(comm_for(op.group));  // DDP
        finish_reduction(op.unit);
      }
      break;
    case OpKind::optimizer: optimizer_step(); break;
  }
  if (rp_.release_after[std::size_t(id)] && units_[std::size_t(op.unit)].params_live())
    units_[std::size_t(op.unit)].release_params();
}

// Rank d's micro-batch m holds sequences m·(b·D) + d·b + j of the global batch (j < b): the step sees
// the same samples whatever the number of data-parallel ranks D.
void RankRuntime::set_micro_batch(int mb) {
  const TrainingSettings& t = rp_.plan.training;
  const std::int64_t b = t.micro_batch, first = std::int64_t(mb) * b * rp_.dp_ranks + std::int64_t(dp_rank_) * b;
  tokens_.resize(std::size_t(b * t.seq));
  targets_.resize(std::size_t(b * t.seq));
  for (std::int64_t j = 0; j < b; ++j) {
    const std::int32_t* row = batch_.data() + (first + j) * (t.seq + 1);
    for (std::int64_t i = 0; i < t.seq; ++i) {
      if (row[i] < 0 || row[i] >= rp_.plan.model.vocab || row[i + 1] < 0 || row[i + 1] >= rp_.plan.model.vocab)
        throw std::runtime_error(fmt::format("step {}: sequence {}: token outside the vocabulary [0, {})",
                                             step_ + 1, first + j, rp_.plan.model.vocab));
      tokens_[std::size_t(j * t.seq + i)] = row[i];
      targets_[std::size_t(j * t.seq + i)] = row[i + 1];
    }
  }
  model_.set_batch(tokens_.data(), targets_.data());
}

std::vector<const float*> RankRuntime::param_ptrs() const {
  std::vector<const float*> p(std::size_t(rp_.layout.num_modules()), nullptr);
  for (const FsdpUnit& u : units_) {
    if (!u.params_live()) continue;
    for (std::size_t k = 0; k < u.flat().modules.size(); ++k) p[std::size_t(u.flat().modules[k])] = u.module_params(int(k));
  }
  return p;
}

void RankRuntime::forward(const Op& op) {
  const Segment& seg = rp_.segments[std::size_t(op.segment)];
  if (seg.first_module == 0) set_micro_batch(op.micro_batch);
  const std::vector<const float*> p = param_ptrs();
  for (int m = seg.first_module; m < seg.first_module + seg.module_count; ++m) model_.forward_module(m, p);
  mem_.alloc(MemCategory::activations, rp_.segment_saved_bytes[std::size_t(op.segment)]);
  if (seg.first_module + seg.module_count - 1 != rp_.layout.head_index()) return;
  const double loss = double(model_.loss());
  result_.loss_sum += loss;
  if (std::isfinite(loss)) return;
  if (options_.on_non_finite == NonFinitePolicy::stop)
    throw std::runtime_error(fmt::format("step {}, micro-batch {}: non-finite loss {}", step_ + 1, op.micro_batch, loss));
  non_finite_ = true;
}

void RankRuntime::backward(const Op& op) {
  const Segment& seg = rp_.segments[std::size_t(op.segment)];
  const int last = seg.first_module + seg.module_count - 1;
  // dloss = 1/(grad_accum·D): the sum-reductions then give the gradient of the global-batch mean loss.
  if (last == rp_.layout.head_index()) model_.begin_backward(float(1.0 / double(rp_.grad_accum * rp_.dp_ranks)));
  const double working = rp_.segment_working_bytes[std::size_t(op.segment)];
  mem_.alloc(MemCategory::transient, working);
  const std::vector<const float*> p = param_ptrs();
  std::vector<float*> g(std::size_t(rp_.layout.num_modules()), nullptr);
  FsdpUnit& unit = units_[std::size_t(op.unit)];
  for (std::size_t k = 0; k < unit.flat().modules.size(); ++k) g[std::size_t(unit.flat().modules[k])] = unit.module_grads(int(k));
  for (int m = last; m >= seg.first_module; --m) model_.backward_module(m, p, g);
  mem_.free(MemCategory::transient, working);
  mem_.free(MemCategory::activations, rp_.segment_saved_bytes[std::size_t(op.segment)]);
}

void RankRuntime::finish_reduction(int unit) {
  if (units_[std::size_t(unit)].finish_reduction()) return;
  if (options_.on_non_finite == NonFinitePolicy::skip_step) {
    non_finite_ = true;
    return;
  }
  throw std::runtime_error(fmt::format("step {}, unit {} (modules {}): non-finite gradient", step_ + 1, unit,
                                       fmt::join(rp_.plan.units[std::size_t(unit)].modules, ", ")));
}

// Global gradient norm: each shard counted once (only its lowest-ranked holder contributes: replica 0
// under HSDP, rank 0 under DDP), summed in rank order over dp_all with a non-finite flag riding along
// so that every rank agrees on skipping. Runs in clip.ar, or inside opt when the plan does not clip.
void RankRuntime::reduce_norm() {
  const bool owner = rp_.shard_count == 1 ? dp_rank_ == 0 : replica_index_ == 0;
  double buf[2] = {0.0, non_finite_ ? 1.0 : 0.0};
  if (owner)
    for (const FsdpUnit& u : units_)
      for (float g : u.grad_shard()) buf[0] += double(g) * double(g);
  world_->all_reduce(buf, 2);
  result_.grad_norm = std::sqrt(buf[0]);
  non_finite_ = buf[1] > 0 || !std::isfinite(result_.grad_norm);
  norm_done_ = true;
}

void RankRuntime::optimizer_step() {
  if (!norm_done_) reduce_norm();
  const OptimizerSettings& o = rp_.plan.optimizer;
  result_.lr = learning_rate(o, step_);
  result_.skipped = non_finite_;
  if (!non_finite_) {
    const AdamWStep s{result_.lr, step_ + 1, clip_scale(result_.grad_norm, o.grad_clip_norm)};
    for (FsdpUnit& u : units_) {
      UnitShardState& st = u.state();
      adamw_update(o, s, st.params.data(), st.exp_avg.data(), st.exp_avg_sq.data(), u.grad_shard().data(),
                   std::int64_t(st.params.size()));
    }
    copy_masters_to_replicas();
  }
  for (FsdpUnit& u : units_) u.zero_grad_shard();
}

}  // namespace fsdpx
