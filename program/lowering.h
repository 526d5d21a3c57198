// program/lowering.h — internals of lower() (not an interface): the Lowerer that builds the step
// program. lower.cpp holds the program-wide parts (process groups, placements, resident state, the
// optimizer step, the collectives across pipeline ranks, rendezvous), lower_units.cpp the FSDP ops of
// one segment pass (all-gather, forward, backward, weight pass, reduction) and lower_pipeline.cpp one
// pipeline rank's passes in schedule order with their sends and receives.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/data_placement.h"
#include "core/plan.h"
#include "cost_models/memory.h"
#include "program/lower.h"
#include "program/pipeline_schedule.h"
#include "program/segment_work.h"
#include "program/step_program.h"

namespace fsdpx::lowering {

// What a compute op of a segment runs: forward, full backward, or ZB's B and W halves.
enum class WorkKind : std::uint8_t { forward, backward, backward_input, backward_weight };

class Lowerer {
 public:
  Lowerer(const Plan& plan, const LowerOptions& options);
  StepProgram build();

 private:
  // An op's name, formatted only when the program keeps names (LowerOptions::op_names); empty otherwise.
  // `format` is an FMT_COMPILE string (the names are formatted per op).
  template <typename S, typename... T>
  std::string op_name(const S& format, const T&... args) const {
    return names_ ? fmt::format(format, args...) : std::string();
  }
  std::string op_name(const char* fixed) const { return names_ ? std::string(fixed) : std::string(); }

  struct UnitState {
    bool live = false;      // unsharded parameters allocated
    int gather_op = -1;     // latest all-gather of the unit
    int gather_index = -1;  // its index in all-gather order
    double kept_bytes = 0;  // the partial copy kept after forward (reshard to g ranks)
    int kept_op = -1;       // the release op that wrote that copy (-1: none kept)
    bool grads_live = false;
    int reduced_op = -1;    // the op after which the unit's gradient is fully reduced
  };
  // A pipeline message: (0 activations / 1 gradients, sending virtual stage, micro-batch).
  struct LinkKey {
    int direction = 0, sender = 0, micro_batch = 0;
  };

  // lower.cpp
  int add_group(GroupKind kind, GroupShape shape, int reshard_ranks = 0);
  int add_mesh_group(GroupKind kind, int degree, int inner, int reshard_ranks = 0);
  void make_groups();
  void place_units();
  void lower_role(int role);
  void tied_all_reduce();
  void optimizer_step();
  double local_optimizer_params() const;
  int add_kernel_op(std::string name, OpKind kind, std::vector<KernelWork> kernels, std::vector<int> deps);
  int unscale_grads(const std::vector<int>& deps);
  void resident_memory();
  void join_rendezvous();
  // lower_lora.cpp
  void adapter_all_reduce();
  StateBytes lora_resident_state() const;
  // lower_units.cpp
  int add_op(Op op);
  int work_set(int seg, WorkKind kind);
  const SegmentMemory& memory_of(int seg) const { return seg_memory_[std::size_t(seg)]; }
  int reshard_ranks(int unit) const;
  // FSDP2 (cost_models/stack_costs.h sharded_grads_from_reduction): the sharded gradients are no
  // resident state but appear with each unit's first reduce-scatter of the step.
  bool grads_from_reduction() const;
  void reduce_scatter_memory(Op& op, int unit, int mb, double grad_bytes);
  bool sharded_params(int unit) const { return is_sharded(prog_.units[std::size_t(unit)].placement.params); }
  bool last_micro_batch(int mb) const { return mb + 1 == micro_batches_; }
  void gather(int unit, int mb, bool backward);
  int forward_segment(int s, int mb, int input_op);
  int backward_segment(int s, int mb, int input_op, bool split);
  void weight_segment(int s, int mb);
  void release_after_backward(int unit, int mb, Op& op);
  void reduce(int unit, int mb, int after_op);
  // lower_pipeline.cpp
  void run_pass(const PipeAction& a);
  void forward_chunk(int stage, int mb);
  void backward_chunk(int stage, int mb, bool split);
  void weight_chunk(int stage, int mb);
  int recv(int direction, int stage, int mb);
  void send(int direction, int stage, int mb, int after_op);
  // Records op `ref` as the send (or receive) of message `key`; false when it already has one.
  bool record_link(std::vector<OpRef>& links, int& count, const LinkKey& key, OpRef ref);
  Op p2p_op(OpKind kind, int direction, int stage, int mb) const;

  const Plan& plan_;
  const bool names_;  // LowerOptions::op_names
  std::vector<Segment> segs_;
  std::vector<double> params_;
  // Parameters of each unit whose sharded state (params, reduced gradients, optimizer) a rank holds x
  // dp_shard x cp: params_ with each MoE block's local experts x ep, since FSDP shards them over
  // dp_shard x cp / ep ranks (program/moe_block.h unit_state_params); params_ for dense models.
  std::vector<double> state_params_;
  // Bytes of each unit as its all-gather moves it: params_ x pb_, the blocks' linear weights at one
  // byte under fp8 all-gather (core/fp8.h).
  std::vector<double> gather_bytes_;
  // Of gather_bytes_, the local routed experts' bytes (program/moe_block.h unit_expert_params x pb_):
  // their all-gather and reduce-scatter run on efsdp_group_ (torchtitan's efsdp mesh) when it has > 1 rank,
  // and are left out when it has 1 (ep = dp_shard x cp: each expert lives whole on one rank).
  std::vector<double> expert_gather_bytes_;
  int efsdp_group_ = -1;
  std::optional<Op> pending_expert_op_;  // split_experts -> add_expert_part (lower_units.cpp)
  double split_experts(Op& op, const std::string& name);
  void add_expert_part(Op& op);
  double op_comm_bytes_of(int op) const;
  DataPlacement placement_;  // the plan's data-parallel mode; every unit is placed so
  double pb_, rb_;
  // Bytes per parameter of a unit's unsharded gradients during its backward: the param dtype where
  // PyTorch's autograd produces them (FSDP1, FSDP2), the reduce dtype in fsdpx's flat units.
  double autograd_grad_bytes_;
  int micro_batches_ = 1;
  int stages_ = 1;  // virtual stages, pp x vpp
  StepProgram prog_;
  StepGroups g_;
  int shard_group_ = -1, replicate_group_ = -1, all_group_ = -1;
  int pp_pair_group_ = -1, pp_ends_group_ = -1, pp_all_group_ = -1;
  int dp_cp_group_ = -1, mesh_all_group_ = -1;  // -1 unless cp (or tp) > 1
  std::map<int, int> reshard_groups_;  // g -> group
  std::map<std::string, int> work_cache_;     // segment signature and work kind -> work set
  std::vector<int> work_of_segment_;          // (segment, WorkKind) -> work set, -1 until asked
  std::vector<SegmentMemory> seg_memory_;     // per segment: segment_memory (a pure function of it)
  std::vector<int> first_forward_segment_, last_forward_segment_;  // per unit
  std::vector<std::vector<int>> stage_segments_;                   // per virtual stage, forward order
  // Per message (direction, sending stage, micro-batch), in that order: its send and its receive (role
  // -1: none yet). Dense arrays in key order, so rendezvous are numbered as a map over the key would.
  std::vector<OpRef> sends_, recvs_;
  int send_count_ = 0, recv_count_ = 0;
  std::vector<OpRef> tied_ops_, norm_ops_;  // cross-stage all-reduces, one per role
  // State of the role being lowered (reset by lower_role).
  int role_ = 0;
  std::vector<UnitState> units_;
  std::vector<int> compute_ops_;      // compute ops in compute-stream order
  std::vector<int> gather_free_ops_;  // per all-gather: the op that frees its buffer (-1: not yet)
  std::vector<int> reduce_ops_;       // every gradient collective, for the optimizer's dependencies
  // FSDP2's post_backward makes the compute stream wait for the previous reduce-scatter before it issues
  // the next one (_fsdp_param_group.py, comm_ctx.reduce_scatter_state): compute issued after a
  // reduce-scatter waits for the one before it. -1 until two reduce-scatters have been issued.
  int last_rs_ = -1, rs_to_wait_ = -1;
  // FSDP2 keeps the last reduce-scatter's input until the next unit's post-backward (pytorch/pytorch
  // torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, post_backward: comm_ctx.reduce_scatter_states,
  // at most reduce_scatter_max_input_buffers = 1, waited on and dropped before the next reduce) or the
  // backward's final callback (_fsdp_state.py): bytes to free at the end of the next reducing backward op.
  double rs_input_pending_bytes_ = 0;
  std::map<std::pair<int, int>, int> input_grad_ops_;  // (segment, micro-batch) -> its B, for its W
};

}  // namespace fsdpx::lowering
