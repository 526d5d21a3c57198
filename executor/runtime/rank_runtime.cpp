// executor/runtime/rank_runtime.cpp — the per-rank op interpreter (see rank_runtime.h).
#include "executor/runtime/rank_runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "executor/runtime/adamw.h"
#include "executor/runtime/lr_schedule.h"
#include "program/all_to_all_contract.h"

namespace fsdpx {

namespace {

std::int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

RankRuntime::RankRuntime(const RuntimeProgram& rp, std::unique_ptr<RankBackend> backend, const TrainerOptions& options)
    : rp_(rp), backend_(std::move(backend)), options_(options) {
  rank_ = backend_->rank();
  const PipelinePlace place = pipeline_place(rp, rank_);
  role_ = place.role;
  mesh_rank_ = place.mesh_rank;
  dp_rank_ = data_parallel_index(rp, rank_);
  par_ = fsdpx::model_parallel(rp, rank_);
  const RankShard at = rank_shard(rp, rank_);
  shard_index_ = at.shard_index;
  replica_index_ = at.replica_index;
  for (const MemEffect& e : rp.program.roles[std::size_t(role_)].resident) program_memory_.alloc(e.category, e.bytes);
  timeline_.rank = rank_, timeline_.role = role_, timeline_.mesh_rank = mesh_rank_;
  if (rp.settings.loss_scale) scaler_ = initial_loss_scaler(*rp.settings.loss_scale);
}

void RankRuntime::set_loss_scaler(const LossScalerState& s) {
  FSDP_CHECK(scaler_.has_value(), "RankRuntime: a loss scaler state for a plan without loss_scale");
  scaler_ = s;
}

void RankRuntime::init_params(std::uint64_t seed) {
  backend_->init_params(seed);
  backend_->copy_masters_to_replicas();
}

// The program's group of an op, as the backend is asked for it (rank_backend.h MeshGroup = GroupKind).
MeshGroup RankRuntime::group_of(int group) const {
  const GroupKind kind = rp_.program.groups[std::size_t(group)].kind;
  FSDP_CHECK(kind != GroupKind::tp && kind != GroupKind::cp && kind != GroupKind::pp_pair && kind != GroupKind::pp_ends,
             "RankRuntime: tp and cp groups are the model's, never an op's; pp_pair and pp_ends ops name their peers");
  return kind;
}

RankStepResult RankRuntime::run_step(std::int64_t step, const DataPosition& pos, DataSource& data, std::mutex& data_mu) {
  const TrainingSettings& t = rp_.settings.training;
  step_ = step;
  result_ = RankStepResult{};
  non_finite_ = norm_stage_done_ = norm_done_ = unscaled_ = found_inf_ = false;
  non_finite_unit_ = -1;
  if (scaler_) result_.loss_scale = double(scaler_->scale);
  {
    std::lock_guard<std::mutex> lock(data_mu);
    data.global_batch(pos, t.global_batch, t.seq, batch_);
  }
  if (std::int64_t(batch_.size()) != t.global_batch * (t.seq + 1))
    throw std::runtime_error(fmt::format("data source {}: {} tokens for a batch of {} × {}", data.describe(),
                                         batch_.size(), t.global_batch, t.seq + 1));
  const auto& ops = rp_.program.roles[std::size_t(role_)].ops;
  if (options_.trace) sample_memory(steady_ns(std::chrono::steady_clock::now()));
  for (int id = 0; id < int(ops.size()); ++id) {
    const auto start = std::chrono::steady_clock::now();
    const Op& op = ops[std::size_t(id)];
    for (const MemEffect& e : op.alloc_at_start) program_memory_.alloc(e.category, e.bytes);
    backend_->begin_op(id, op);
    run_op(op);
    backend_->end_op(id, op);
    for (const MemEffect& e : op.free_at_end) program_memory_.free(e.category, e.bytes);
    program_memory_.free(MemCategory::transient, released_param_bytes(rp_.program, op));
    if (!options_.profile && !options_.trace) continue;
    backend_->synchronize();
    const auto end = std::chrono::steady_clock::now();
    if (options_.profile) op_time_s_[op.name] += std::chrono::duration<double>(end - start).count();
    if (!options_.trace) continue;
    timeline_.ops.push_back(MeasuredOp{id, step_, steady_ns(start), steady_ns(end)});
    sample_memory(steady_ns(end));
  }
  backend_->finish_sends();
  if (options_.trace) trim_timeline();
  return result_;
}

void RankRuntime::sample_memory(std::int64_t at_ns) {
  MeasuredMemory m{at_ns, step_, {}};
  for (int c = 0; c < kMemCategoryCount; ++c) m.bytes[std::size_t(c)] = backend_->memory().live_bytes(MemCategory(c));
  timeline_.memory.push_back(m);
}

// Keeps the last options_.trace_steps steps (all when 0).
void RankRuntime::trim_timeline() {
  if (options_.trace_steps <= 0) return;
  const std::int64_t first_kept = step_ - options_.trace_steps + 1;
  std::erase_if(timeline_.ops, [&](const MeasuredOp& o) { return o.step < first_kept; });
  std::erase_if(timeline_.memory, [&](const MeasuredMemory& m) { return m.step < first_kept; });
}

// Every effect is a field of the op (program/step_program.h): what a collective moves, whether it
// completes the unit's gradient reduction, whether the unit's parameters are released after it.
void RankRuntime::run_op(const Op& op) {
  switch (op.kind) {
    case OpKind::all_gather: backend_->gather(op.unit, group_of(op.group), op.kept_shard_ranks > 1); break;
    case OpKind::forward: forward(op), check_model_collectives(op); break;
    case OpKind::backward:
    case OpKind::backward_input: backward(op), check_model_collectives(op); break;
    case OpKind::backward_weight: backend_->backward_weight(op.segment, op.unit, op.micro_batch); break;
    case OpKind::free: break;
    case OpKind::reduce_scatter: backend_->reduce_scatter(op.unit, group_of(op.group)); break;
    case OpKind::all_reduce: all_reduce(op); break;
    case OpKind::optimizer: optimizer_step(); break;
    case OpKind::unscale: unscale(); break;
    case OpKind::send:
    case OpKind::recv: point_to_point(op); break;
  }
  if (op.completes_reduction) backend_->finish_reduction(op.unit);
  if (op.release_params) release(op);
}

void RankRuntime::all_reduce(const Op& op) {
  switch (op.payload) {
    case Payload::grads: backend_->all_reduce_full(op.unit, group_of(op.group)); break;          // DDP
    case Payload::grad_shard: backend_->all_reduce_reduced(op.unit, group_of(op.group)); break;  // HSDP
    case Payload::grad_norm: reduce_norm(rp_.program.groups[std::size_t(op.group)].kind); break;
    case Payload::tied_grads: backend_->all_reduce_tied(op.unit); break;
    case Payload::adapter_grads: backend_->all_reduce_adapter_grads(group_of(op.group)); break;
    case Payload::none:
    case Payload::params:
    case Payload::activations:
    case Payload::activation_grads: FSDP_CHECK(false, "RankRuntime: an all-reduce of parameters, activations or nothing"); break;
  }
}

// A copy sharded over g ranks may stay (FSDP2's int reshard_after_forward): 1/g of the unit's fp32 buffer.
void RankRuntime::release(const Op& op) {
  backend_->release(op.unit, op.kept_shard_ranks > 1 ? rp_.kept_copy_bytes[std::size_t(op.unit)] : 0.0);
}

// Rank d's micro-batch m holds sequences m·(b·D) + d·b + j of the global batch (j < b): the step sees
// the same samples whatever the number of data-parallel ranks D.
void RankRuntime::set_micro_batch(int mb) {
  const TrainingSettings& t = rp_.settings.training;
  const std::int64_t vocab = rp_.settings.model.vocab;
  const std::int64_t b = t.micro_batch, first = std::int64_t(mb) * b * rp_.dp_ranks + std::int64_t(dp_rank_) * b;
  tokens_.resize(std::size_t(b * t.seq));
  targets_.resize(std::size_t(b * t.seq));
  for (std::int64_t j = 0; j < b; ++j) {
    const std::int32_t* row = batch_.data() + (first + j) * (t.seq + 1);
    for (std::int64_t i = 0; i < t.seq; ++i) {
      if (row[i] < 0 || row[i] >= vocab || row[i + 1] < 0 || row[i + 1] >= vocab)
        throw std::runtime_error(fmt::format("step {}: sequence {}: token outside the vocabulary [0, {})",
                                             step_ + 1, first + j, vocab));
      tokens_[std::size_t(j * t.seq + i)] = row[i];
      targets_[std::size_t(j * t.seq + i)] = row[i + 1];
    }
  }
  backend_->set_micro_batch(mb, tokens_.data(), targets_.data());
}

void RankRuntime::forward(const Op& op) {
  if (rp_.program.segments[std::size_t(op.segment)].embeds_tokens) set_micro_batch(op.micro_batch);
  backend_->forward(op.segment, op.micro_batch);
}

void RankRuntime::backward(const Op& op) {
  const Segment& seg = rp_.program.segments[std::size_t(op.segment)];
  // dloss = 1/(grad_accum·D): the sum-reductions then give the gradient of the global-batch mean loss;
  // times the scale under loss scaling (GradScaler.scale: the fp32 loss times the fp32 scale).
  const double scale = scaler_ ? double(scaler_->scale) : 1.0;
  if (seg.computes_loss)
    backend_->begin_backward(op.micro_batch, scale / double(rp_.grad_accum * rp_.dp_ranks));
  if (op.kind == OpKind::backward_input)
    backend_->backward_input(op.segment, op.micro_batch);
  else
    backend_->backward(op.segment, op.unit, op.micro_batch);
}

// A message is named by the program's rendezvous of its send and receive (program/lower.cpp pairs
// them), so that a receive takes exactly the message its send made. A stage's forward starts with its input's receive: the micro-batch's tokens and targets go with it
// (the last stage's loss needs the targets).
void RankRuntime::point_to_point(const Op& op) {
  const bool activations = op.payload == Payload::activations, sending = op.kind == OpKind::send;
  FSDP_CHECK(activations || op.payload == Payload::activation_grads, "RankRuntime: send/recv of no activations");
  FSDP_CHECK(op.rendezvous >= 0, "RankRuntime: a send or receive outside a rendezvous");
  const int tag = op.rendezvous;
  const int peer = global_rank(rp_, op.peer_role, mesh_rank_);
  if (sending) {
    backend_->send(op.payload, op.segment, op.micro_batch, peer, tag);
    return;
  }
  if (activations) set_micro_batch(op.micro_batch);
  backend_->recv(op.payload, op.segment, op.micro_batch, peer, tag);
}

// The micro-batch losses of this step (read once all forwards ran: an asynchronous backend then waits
// only here) and the gradients' finiteness, under the non-finite policy. Under pipelining a stage
// before the last sees a non-finite loss only as non-finite gradients, so it stops after the norm
// across stages (stop_on_non_finite_gradient), which the last stage's loss error aborts first.
void RankRuntime::check_losses() {
  const std::vector<double> losses = backend_->take_losses();
  for (std::size_t mb = 0; mb < losses.size(); ++mb) {
    result_.loss_sum += losses[mb];
    if (std::isfinite(losses[mb])) continue;
    if (options_.on_non_finite == NonFinitePolicy::stop)
      throw std::runtime_error(fmt::format("step {}, micro-batch {}: non-finite loss {}", step_ + 1, mb, losses[mb]));
    non_finite_ = true;
  }
  non_finite_unit_ = backend_->first_non_finite_unit();
  if (non_finite_unit_ < 0) return;
  non_finite_ = true;
  if (rp_.program.pp == 1) stop_on_non_finite_gradient();
}

// Under loss scaling a non-finite gradient is the scaler's to handle (skip and back off), whatever the policy.
void RankRuntime::stop_on_non_finite_gradient() const {
  if (non_finite_unit_ < 0 || options_.on_non_finite != NonFinitePolicy::stop || scaler_) return;
  throw std::runtime_error(fmt::format("step {}, unit {} (modules {}): non-finite gradient", step_ + 1, non_finite_unit_,
                                       fmt::join(rp_.program.units[std::size_t(non_finite_unit_)].modules, ", ")));
}

// Global gradient norm: each shard counted once (only its lowest-ranked holder contributes: replica 0
// under sharding, whose shard group spans cp; rank 0 and cp rank 0 under DDP; the backend counts tensors every tp rank holds whole on tp
// rank 0), summed in rank order over every rank of the mesh with a non-finite flag and the loss riding
// along (tp rank 0's: the tp ranks compute the same loss; cp ranks add their shares), then (pp > 1) over
// the pipeline ranks at this mesh point, so that every rank agrees on skipping and knows the global loss
// (the last stage's). Runs in clip.ar and clip.pp, or inside opt when the plan does not clip.
void RankRuntime::reduce_norm(GroupKind over) {
  if (over != GroupKind::pp_all) {
    check_losses();
    const bool owner = rp_.shard_count == 1 ? dp_rank_ == 0 && par_.cp_rank == 0 : replica_index_ == 0;
    norm_buf_[0] = owner ? backend_->grad_sq_sum() : 0.0;
    // LoRA adapters: every rank holds them whole, so data-parallel rank 0 counts them.
    if (dp_rank_ == 0 && par_.cp_rank == 0 && par_.tp_rank == 0) norm_buf_[0] += backend_->adapter_grad_sq_sum();
    norm_buf_[1] = non_finite_ || found_inf_ ? 1.0 : 0.0;
    norm_buf_[2] = par_.tp_rank == 0 ? result_.loss_sum : 0.0;
    backend_->all_reduce_host(norm_buf_, 3, MeshGroup::mesh_all);
    norm_stage_done_ = true;
  } else {
    FSDP_CHECK(norm_stage_done_, "RankRuntime: the norm across stages before the stage's");
    backend_->all_reduce_host(norm_buf_, 3, MeshGroup::pp_all);
  }
  result_.grad_norm = std::sqrt(norm_buf_[0]);
  non_finite_ = norm_buf_[1] > 0 || !std::isfinite(result_.grad_norm);
  result_.loss_sum = norm_buf_[2];
  norm_done_ = over == GroupKind::pp_all || rp_.program.pp == 1;
  if (norm_done_) stop_on_non_finite_gradient();
}

// The step program lists the tensor-, context- and expert-parallel collectives of each compute op (its
// work set's serial collectives, which the simulator times): the model must have issued exactly those,
// with the bytes stated; the ep group's variable-count all-to-alls as many as stated, each within the
// program's bound (program/all_to_all_contract.h), counted under bytes -1.
void RankRuntime::check_model_collectives(const Op& op) {
  using Key = std::tuple<int, int, std::int64_t>;  // (axis, collective, bytes)
  std::map<Key, int> want, got;
  double stated_a2a_bytes = 0;
  for (const SerialCollective& sc : rp_.program.work_sets[std::size_t(op.work_set)].serial_comms) {
    const GroupKind kind = rp_.program.groups[std::size_t(sc.group)].kind;
    const ModelAxis axis = kind == GroupKind::tp ? ModelAxis::tp : kind == GroupKind::ep ? ModelAxis::ep : ModelAxis::cp;
    const bool variable = is_variable_all_to_all(rp_.program, sc);
    if (variable) stated_a2a_bytes = sc.bytes;
    want[Key{int(axis), int(sc.kind), variable ? -1 : std::int64_t(sc.bytes)}] += sc.count;
  }
  for (const IssuedCollective& c : backend_->take_model_collectives()) {
    const bool variable = c.axis == ModelAxis::ep && c.kind == Collective::all_to_all;
    if (variable && !variable_all_to_all_within(stated_a2a_bytes, par_.ep, c.bytes))
      throw std::runtime_error(fmt::format("{}: the model's ep all-to-all moved {} B, outside the step program's "
                                           "bound for its {} B on {} ranks", op.name, c.bytes, stated_a2a_bytes, par_.ep));
    ++got[Key{int(c.axis), int(c.kind), variable ? -1 : std::int64_t(c.bytes)}];
  }
  if (want == got) return;
  auto describe = [](const std::map<Key, int>& m) {
    std::string out;
    for (const auto& [k, n] : m)
      out += fmt::format("{}{} x{}", out.empty() ? "" : ", ",
                         collective_profile_name(ModelAxis(std::get<0>(k)), Collective(std::get<1>(k)), double(std::get<2>(k))), n);
    return out.empty() ? std::string("none") : out;
  };
  throw std::runtime_error(fmt::format("{}: the model issued {}, but the step program lists {}", op.name,
                                       describe(got), describe(want)));
}

// GradScaler.unscale_ on this rank's reduced shards: multiply by 1/scale (fp32, as GradScaler takes the
// reciprocal of its fp32 scale) and note any inf/NaN for the all-reduce that follows.
void RankRuntime::unscale() {
  FSDP_CHECK(scaler_.has_value(), "RankRuntime: an unscale op in a plan without loss_scale");
  found_inf_ = backend_->unscale_grads(float(1.0 / double(scaler_->scale)));
  unscaled_ = true;
}

// AdamW counts the steps it took (torch.optim's state "step"): under loss scaling, skipped steps do not
// advance its bias correction, while the learning-rate schedule follows the step index.
void RankRuntime::optimizer_step() {
  if (!norm_stage_done_) reduce_norm(GroupKind::dp_all);
  if (!norm_done_) reduce_norm(GroupKind::pp_all);
  FSDP_CHECK(!scaler_ || unscaled_, "RankRuntime: the optimizer step of a loss-scaled plan before its unscale op");
  const OptimizerSettings& o = rp_.settings.optimizer;
  result_.lr = learning_rate(o, step_);
  result_.skipped = non_finite_;
  const std::int64_t adam_step = step_ + 1 - (scaler_ ? scaler_->skipped_steps : 0);
  if (!non_finite_) {
    backend_->adamw(o, AdamWStep{result_.lr, adam_step, clip_scale(result_.grad_norm, o.grad_clip_norm)});
    backend_->copy_masters_to_replicas();
  }
  if (scaler_) update_loss_scaler(*scaler_, *rp_.settings.loss_scale, non_finite_);
  backend_->zero_grad_shards();
}

}  // namespace fsdpx
