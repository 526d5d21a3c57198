// executor/runtime/rank_skeleton.h — the FSDP rank skeleton written once for every backend: a rank's
// place (pipeline rank, mesh rank, tensor- and context-parallel ranks), the mesh groups it splits off its
// world and the communicator of each program group, its units (rank_units.h) and the unit ops of the step
// program (all-gather, release with a kept copy, the three gradient reductions, the tied table's
// all-reduce, loading state, DDP's master copy), each run on the unit and the tied copy riding along with
// it; and the gradient-shard bookkeeping around the optimizer: accumulation's finiteness flags, fp16
// loss scaling's unscale pass, the gradient norm's Σ g² (tp-replicated tensors counted once), AdamW over
// the units or, under LoRA, the adapters alone, and the adapters' all-reduce. A backend (CpuRankBackend,
// CudaRankBackendT) derives from it with its unit (model/fsdp_unit.h over the backend's device policy,
// which runs each unit op) and communicator types and supplies the rest of the device half: how a
// communicator splits, loading a unit's state, and the kernels over fp32 gradient buffers (torchtitan's
// simple_fsdp: DDP, FSDP and HSDP are placements of one mechanism). Leaves out the model
// ops and the pipeline messages (model_skeleton.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/runtime/grad_norm_ranges.h"
#include "executor/runtime/rank_backend.h"
#include "executor/runtime/rank_units.h"
#include "executor/runtime/runtime_program.h"

namespace fsdpx {

// The gradient reductions of one unit (RankBackend::reduce_scatter, all_reduce_reduced, all_reduce_full).
enum class UnitReduction { scatter, reduced, full };

template <class Unit, class Comm>
class RankSkeleton : public RankBackend {
 public:
  RankSkeleton(const RuntimeProgram& rp, std::unique_ptr<Comm> world)
      : rp_(rp), world_(std::move(world)), par_(model_parallel(rp, world_->rank())) {
    const PipelinePlace place = pipeline_place(rp, world_->rank());
    role_ = place.role;
    mesh_rank_ = place.mesh_rank;
    const int unit_shard = rank_shard(rp, world_->rank()).unit_shard;
    for (const FlatUnitLayout& f : rp.flats)
      norm_ranges_.push_back(grad_norm_ranges(rp.tp_layouts[std::size_t(par_.tp_rank)], f, unit_shard, par_.tp_rank));
  }

  int rank() const final { return world_->rank(); }
  void connect() final;
  bool holds_unit(int unit) const final { return units_.holds(unit); }
  void load_unit_state(int unit, const UnitShardState& s) final {
    FSDP_CHECK(holds_unit(unit), fmt::format("rank backend: unit {} is on another pipeline rank", unit));
    for (const auto& [source, u] : units_.indexed())
      if (source == unit) load_unit(*u, s);
  }
  void copy_masters_to_replicas() final {
    for (const auto& [source, u] : units_.indexed())
      if (master_is_replica(rp_, source)) u->copy_master_to_replica();
  }

  // From the kept copy over the unit's reshard group (FSDP2's int reshard_after_forward), else from the
  // master shards over `group`.
  void gather(int unit, MeshGroup group, bool from_kept) final {
    FSDP_CHECK(from_kept == (group == MeshGroup::reshard), "rank backend: a kept copy gathers over its reshard group");
    Comm& c = from_kept ? reshard_comm(unit) : comm(group);
    for (Unit* u : units_.with_copy(unit)) {
      if (group == MeshGroup::efsdp)
        u->gather_experts(c);  // the experts' twin op (program/lower_units.cpp split_experts)
      else if (from_kept)
        u->gather_kept(c);
      else
        u->gather(c);
    }
  }
  // `kept_bytes` > 0: the program keeps a copy (RuntimeProgram::kept_copy_bytes, in the device's dtype).
  void release(int unit, double kept_bytes) final {
    const int g = kept_bytes > 0 ? rp_.program.units[std::size_t(unit)].kept_shard_ranks : 0;
    const int at = g > 1 ? reshard_comm(unit).rank() : 0;
    for (Unit* u : units_.with_copy(unit)) u->release(g, at);
    FSDP_CHECK(units_.own(unit).kept_bytes() == kept_bytes,
               "rank backend: a kept copy of other bytes than the program's");
  }
  void reduce_scatter(int unit, MeshGroup group) final { reduce(unit, UnitReduction::scatter, group); }
  void all_reduce_reduced(int unit, MeshGroup group) final { reduce(unit, UnitReduction::reduced, group); }
  void all_reduce_full(int unit, MeshGroup group) final { reduce(unit, UnitReduction::full, group); }
  // The accumulated (reduced) shards of the two copies of the table line up element for element: the
  // copy has the embedding unit's layout and shard.
  void all_reduce_tied(int unit) final {
    FSDP_CHECK(pp_ends_comm_ != nullptr, "rank backend: a tied all-reduce without pipeline parallelism");
    Unit& u = units_.tied_grads(rp_, role_, unit);
    all_reduce_shard(*pp_ends_comm_, u.grad_shard(), u.flat().shard_numel);
  }

  // The copy of a tied table flags its non-finite values under the head's unit.
  void finish_reduction(int unit) final {
    for (Unit* u : units_.with_copy(unit)) finish_unit_reduction(*u, unit);
  }
  // Every accumulated shard (a tied table's copy steps like its source) and the adapters' gradient
  // (whole on every rank, summed by their all-reduce before this op), one flag for all.
  bool unscale_grads(float inv_scale) final {
    for (Unit* u : units_.all()) unscale_shard(u->grad_shard(), u->flat().shard_numel, inv_scale);
    if (float* g = adapter_grads()) unscale_shard(g, adapter_numel(), inv_scale);
    return take_found_inf();
  }
  // In unit order; the copy of a tied table is counted once, on the first stage.
  double grad_sq_sum() final {
    for (std::size_t u = 0; u < rp_.flats.size(); ++u) {
      if (!units_.owns(int(u))) continue;
      const float* g = units_.own(int(u)).grad_shard();
      if (par_.ep > 1) {  // tp = 1: the whole state (its two parts, expert_shards.h), padding zero
        add_sum_squares(g, units_.own(int(u)).flat().shard_numel);
        continue;
      }
      for (const auto& [begin, end] : norm_ranges_[u]) add_sum_squares(g + begin, end - begin);
    }
    return take_sum_squares();
  }
  void adamw(const OptimizerSettings& o, const AdamWStep& s) final {
    if (adapter_grads() != nullptr) {  // LoRA: the base is frozen, only the adapters step
      adamw_adapters(o, s);
      return;
    }
    for (Unit* u : units_.all()) u->adamw(o, s);  // the unit's device policy runs the kernel
  }
  void zero_grad_shards() final {
    for (Unit* u : units_.all()) zero_shard(u->grad_shard(), u->flat().shard_numel);
    if (float* g = adapter_grads()) zero_shard(g, adapter_numel());
    clear_non_finite();
  }

  // ar.lora: summed in fp32 over `group`; a non-finite value is reported against the first unit. fp16
  // plans: the gradients leave their GEMMs as fp16 values, as the base units' do, so an overflowing loss
  // scale shows here too.
  void all_reduce_adapter_grads(MeshGroup group) final {
    float* g = adapter_grads();
    FSDP_CHECK(g != nullptr, "rank backend: an adapter reduction without LoRA");
    if (rp_.settings.precision.param == DType::fp16) round_to_fp16(g, adapter_numel());
    all_reduce_shard(comm(group), g, adapter_numel());
    flag_non_finite(g, adapter_numel(), 0);
  }
  double adapter_grad_sq_sum() final {
    float* g = adapter_grads();
    if (g == nullptr) return 0.0;
    add_sum_squares(g, adapter_numel());
    return take_sum_squares();
  }

  void abort(const std::string& msg) final { world_->abort(msg); }
  const MemoryTracker& memory() const final { return mem_; }

 protected:
  // The device half. split_world: collective over the world (as Communicator::split, named for the
  // device's watchdog); connect_device: the device's own groups, split after the mesh groups.
  virtual std::unique_ptr<Comm> split_world(int color, int key, const std::string& name) = 0;
  virtual void connect_device() {}
  virtual void load_unit(Unit& u, const UnitShardState& s) = 0;
  // Adds the unit's reduced shard to its accumulator, flagging `unit` on a NaN or an infinity.
  virtual void finish_unit_reduction(Unit& u, int unit) = 0;
  virtual void adamw_adapters(const OptimizerSettings& o, const AdamWStep& s) = 0;
  // The adapters' fp32 gradient (null without LoRA) and its element count.
  virtual float* adapter_grads() = 0;
  virtual std::int64_t adapter_numel() const = 0;
  // The kernels over n fp32 gradient values g on the device, in the current op's order:
  virtual void all_reduce_shard(Comm& c, float* g, std::int64_t n) = 0;  // sum over c
  virtual void zero_shard(float* g, std::int64_t n) = 0;
  virtual void round_to_fp16(float* g, std::int64_t n) = 0;  // to the nearest fp16 values
  // g *= inv_scale, noting a NaN or an infinity in one flag that take_found_inf reads and clears.
  virtual void unscale_shard(float* g, std::int64_t n, float inv_scale) = 0;
  virtual bool take_found_inf() = 0;
  // Σ g² onto a running fp64 sum, in order, that take_sum_squares reads and clears (0 when none).
  virtual void add_sum_squares(const float* g, std::int64_t n) = 0;
  virtual double take_sum_squares() = 0;
  // Notes `unit` as holding a non-finite gradient when g has a NaN or an infinity (first_non_finite_unit).
  virtual void flag_non_finite(float* g, std::int64_t n, int unit) = 0;
  virtual void clear_non_finite() = 0;
  // The communicator a reduction runs on (CUDA: the reduce-scatters' own shard-group communicator).
  virtual Comm& reduction_comm(UnitReduction, MeshGroup group) { return comm(group); }

  // Under pipeline parallelism the mesh is the stage's: its own split beside tp or cp, else dp_all.
  Comm& comm(MeshGroup group) const {
    Comm* mesh = rp_.program.pp == 1 ? world_.get() : stage_comm_ ? stage_comm_.get() : dp_all_comm_.get();
    const GroupCommunicators<Comm> groups{mesh,          shard_comm_.get(),      replica_comm_.get(),
                                          dp_all_comm_.get(), shard_cp_comm_.get(), dp_cp_comm_.get(),
                                          pp_all_comm_.get(), ep_comm_.get(), efsdp_comm_.get()};
    return group_communicator(group, groups);
  }
  // The units' shard group (program/group_members.h shard_group_kind): their all-gathers and reduce-scatters.
  MeshGroup shard_group() const { return shard_group_kind(rp_.program.mesh); }
  Comm& reshard_comm(int unit) const {  // the unit's reshard group (FSDP2's post-forward mesh)
    return reshard_communicator(reshard_comms_, rp_.program.units[std::size_t(unit)].kept_shard_ranks);
  }
  std::unique_ptr<Comm> split_group(const ProcessGroup& g, const std::string& name) {
    const auto [color, key] = mesh_group_split(rp_.program.mesh, g, role_, mesh_rank_);
    return split_world(color, key, name);
  }

  const RuntimeProgram& rp_;
  std::unique_ptr<Comm> world_, shard_comm_, replica_comm_;
  std::unique_ptr<Comm> tp_comm_, cp_comm_, dp_all_comm_, shard_cp_comm_, dp_cp_comm_;  // tp, cp or pp > 1
  std::unique_ptr<Comm> pp_all_comm_, pp_ends_comm_;                                      // pp > 1
  std::unique_ptr<Comm> stage_comm_;  // pp > 1 beside tp or cp: the pipeline rank's whole mesh
  std::unique_ptr<Comm> ep_comm_, efsdp_comm_;  // ep > 1: the token exchange's group, the experts' FSDP group
  std::vector<std::pair<int, std::unique_ptr<Comm>>> reshard_comms_;  // per reshard group size g
  int role_ = 0, mesh_rank_ = 0;
  ModelParallel par_;
  MemoryTracker mem_;
  RankUnits<Unit> units_;  // the rank's stages' units and a tied table's copy (the backend makes them)
  std::vector<ShardRanges> norm_ranges_;  // per plan unit: the shard's elements the gradient norm counts

 private:
  void reduce(int unit, UnitReduction r, MeshGroup group) {
    if (group == MeshGroup::efsdp) {
      FSDP_CHECK(r == UnitReduction::scatter, "rank backend: the experts reduce by reduce-scatter only");
      for (Unit* u : units_.with_copy(unit)) u->reduce_scatter_experts(comm(group));  // ahead of the rest
      return;
    }
    Comm& c = reduction_comm(r, group);
    for (Unit* u : units_.with_copy(unit)) {
      switch (r) {
        case UnitReduction::scatter: u->reduce_scatter(c); break;
        case UnitReduction::reduced: u->all_reduce_reduced(c); break;
        case UnitReduction::full: u->all_reduce_full(c); break;
      }
    }
  }
};

// The elements of one pipeline message, either way: the micro-batch's hidden states [N_local, C] on this
// rank, N_local = micro_batch · seq / cp tokens, split once more over tp under sequence parallelism (the
// step program's p2p bytes, program/lower_pipeline.cpp; Megatron-LM's tensor_shape[0] //= tp).
inline std::int64_t pipeline_message_numel(const RuntimeProgram& rp, const ModelParallel& par) {
  const RunSettings& run = rp.settings;
  const std::int64_t tokens = run.training.micro_batch * run.training.seq / par.cp;
  return tokens / (par.sp() ? par.tp : 1) * run.model.hidden;
}

// Every rank splits the same groups in the same order (split is collective over the world). A group
// inside a pipeline rank's mesh is colored by the pipeline rank and its lowest mesh rank, its members
// ordered as program/group_members lists them; a mesh point's pipeline ranks by the mesh rank, ordered
// by pipeline rank.
template <class Unit, class Comm>
void RankSkeleton<Unit, Comm>::connect() {
  const Mesh& mesh = rp_.program.mesh;
  auto split = [&](GroupKind kind, const char* name) {
    ProcessGroup g;
    g.kind = kind;
    return split_group(g, name);
  };
  shard_comm_ = split(GroupKind::dp_shard, "dp_shard");
  replica_comm_ = split(GroupKind::dp_replicate, "dp_replicate");
  if (par_.tp > 1) tp_comm_ = split(GroupKind::tp, "tp");
  if (par_.cp > 1) {
    cp_comm_ = split(GroupKind::cp, "cp");
    shard_cp_comm_ = split(GroupKind::dp_shard_cp, "dp_shard_cp");  // the units' shard group
    dp_cp_comm_ = split(GroupKind::dp_cp, "dp_cp");
  }
  if (par_.ep > 1) {  // the program's groups, as group_members lists them
    ep_comm_ = split_group(ProcessGroup{GroupKind::ep, {}, par_.ep}, "ep");
    efsdp_comm_ = split_group(ProcessGroup{GroupKind::efsdp, {}, par_.ep}, "efsdp");
  }
  const int pp = rp_.program.pp;
  if (par_.any() || pp > 1) dp_all_comm_ = split(GroupKind::dp_all, "dp_all");
  for (const ProcessGroup& g : rp_.program.groups)  // FSDP2's post-forward meshes (reshard_after_forward = g)
    if (g.kind == GroupKind::reshard) reshard_comms_.emplace_back(g.reshard_ranks, split_group(g, "reshard"));
  if (pp > 1) {
    if (par_.any()) stage_comm_ = split(GroupKind::mesh_all, "mesh_all");
    pp_all_comm_ = split_world(mesh_rank_, role_, "pp_all");
    const bool end = role_ == 0 || role_ == pp - 1;  // the other ranks' group goes unused
    if (rp_.program.tied_copy_source >= 0)
      pp_ends_comm_ = split_world((end ? 0 : mesh.size()) + mesh_rank_, role_, "pp_ends");
  }
  connect_device();
}

}  // namespace fsdpx
