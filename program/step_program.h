// program/step_program.h — the step program: one training step as explicit data, the output of
// lowering and the input of both interpreters (simulator and executor). Per role (a class of ranks
// that run identical programs: all ranks when there is no pipeline parallelism) and per stream, ordered
// ops with dependencies, each with its cost-model inputs, its memory effects and its effects on the
// training state (what a collective moves, when a unit's parameters are released, when a gradient
// reduction is complete), so that no interpreter re-derives them. Role r is pipeline rank r (one role
// without pipeline parallelism); its ranks are `role_ranks` copies, one per point of the mesh. Ops of
// different roles that run together (a send and its receive, a collective across pipeline stages) form a
// rendezvous. The engine can run one copy per role (symmetry) or every rank. Leaves out host-side work
// (data loading, Python overhead) and kernel launch gaps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/data_placement.h"
#include "core/plan_settings.h"
#include "cost_models/communication.h"
#include "cost_models/compute.h"
#include "program/small_vec.h"

namespace fsdpx {

// Pipeline point-to-point traffic runs on one stream per direction and side, so that every link between
// two pipeline ranks carries its messages in one order on both ends: activations go to the next
// virtual stage (send_activations, received on recv_activations), activation gradients to the previous
// one (send_grads, recv_grads).
enum class StreamKind : std::uint8_t {
  compute, all_gather, reduce_scatter, all_reduce, send_activations, recv_activations, send_grads, recv_grads
};
inline constexpr int kStreamCount = 8;
const char* stream_name(StreamKind s);

enum class OpKind : std::uint8_t {
  all_gather,       // unshard a unit's parameters
  forward,          // forward of one segment (consecutive modules of one unit) for one micro-batch
  backward,         // recompute (if any) + input-grad + weight-grad of one segment for one micro-batch
  reduce_scatter,   // reduce a unit's gradients to shards
  all_reduce,       // across replicas (HSDP, DDP), the whole data-parallel group, or pipeline stages
  optimizer,        // AdamW on the local shard
  free,             // release memory (reshard a unit) without work
  backward_input,   // ZB's B: recompute (if any) + input-grad of one segment; keeps what its W needs
  backward_weight,  // ZB's W: weight-grad of one segment for one micro-batch (after its B)
  send,             // pipeline: send a micro-batch's activations or activation gradients to peer_role
  recv,             // pipeline: receive them from peer_role
  unscale,          // fp16 loss scaling: unscale the reduced gradient shards and check them for inf/NaN
};
inline constexpr int kOpKindCount = 12;
const char* op_kind_name(OpKind k);

// What a collective op moves, for interpreters that run it (the simulator needs only its collective,
// bytes and group).
enum class Payload : std::uint8_t {
  none,         // compute, optimizer and free ops
  params,       // all-gather: the unit's parameter shards into its unsharded parameters
  grads,        // reduce-scatter or all-reduce of the unit's unsharded gradients
  grad_shard,   // all-reduce of the unit's reduce-scattered gradient shard across replicas (HSDP)
  grad_norm,    // all-reduce of the squared gradient norm (clipping), no unit
  activations,  // send/recv: the output of the sender's virtual stage, the input of the receiver's
  activation_grads,  // send/recv: the loss gradient w.r.t. that tensor, from the receiver's stage back
  tied_grads,   // all-reduce of a tied embedding's reduced gradient between the first and last stage
  adapter_grads,  // all-reduce of the LoRA adapters' gradients (every rank holds them whole), no unit
};
const char* payload_name(Payload p);

enum class MemCategory : std::uint8_t { params, grads, optimizer, activations, transient, other };
inline constexpr int kMemCategoryCount = 6;
const char* mem_category_name(MemCategory c);

// A change of live bytes on the op's rank. `bytes` is always >= 0; the list it sits in gives the sign:
// RoleProgram::resident and Op::alloc_at_start allocate it, Op::free_at_end frees it. The engine
// checks that live bytes per category never go below zero (1 byte of rounding slack).
struct MemEffect {
  MemCategory category = MemCategory::transient;
  double bytes = 0;
};
// An op's memory effects: at most three per list in any lowered program, two without a heap block.
using MemEffects = SmallVec<MemEffect, 2>;
// An op's dependencies: most ops have one to three, four without a heap block.
using OpDeps = SmallVec<int, 4>;

// Process groups of the mesh; a collective names one. The pipeline kinds span roles: pp_pair is a
// rank and the rank at the same mesh point on a neighbouring pipeline rank (send/recv), pp_ends the
// first and last pipeline rank (tied embeddings), pp_all every pipeline rank (the gradient norm).
// Context-parallel ranks hold the same parameters and see different tokens, so with cp > 1 gradients
// are also summed over cp, and FSDP shards over dp_shard x cp: dp_shard_cp (torchtitan's dp_shard_cp
// mesh, v0.2.2's "fsdp" dimension; Megatron's distributed optimizer over data x context parallel) is the
// shard group of every sharded state when cp > 1 (all-gathers and reduce-scatters; HSDP's all-reduce of
// the shard stays on dp_replicate), dp_cp (DDP's all-reduce) adds the cp axis to dp_all; mesh_all (every rank of one pipeline
// rank's mesh) sums the gradient norm when tp or cp > 1. ep (expert parallelism, core/expert_parallel.h)
// holds runs of ep / cp consecutive dp_shard coordinates with every cp coordinate: the MoE blocks'
// dispatch and combine all-to-alls.
enum class GroupKind : std::uint8_t {
  dp_shard, dp_replicate, dp_all, tp, cp, reshard, pp_pair, pp_ends, pp_all,
  dp_shard_cp,  // FSDP's shard group when cp > 1: every dp_shard and cp coordinate (adjacent mesh axes)
  dp_cp, mesh_all, ep,
  efsdp  // the routed experts' FSDP group: dp_shard x cp / ep ranks (core/expert_parallel.h expert_fsdp_ranks)
};
const char* group_kind_name(GroupKind k);  // "dp_shard", "reshard", "pp_pair", ...
struct ProcessGroup {
  GroupKind kind = GroupKind::dp_shard;
  GroupShape shape;
  int reshard_ranks = 0;  // kind reshard: g; kinds ep and efsdp: ep
};

// A collective issued inside a compute op and waited for at once (Megatron TP, ring-attention CP).
struct SerialCollective {
  Collective kind = Collective::all_gather;
  double bytes = 0;  // nccl-tests' S
  int group = -1;
  int count = 1;     // how many times per op
};

// The work of one compute op, shared by every op that does the same (all blocks of a model, all
// micro-batches): its kernels (cost-model inputs, the executor's profile names) and serial collectives.
struct WorkSet {
  std::vector<KernelWork> kernels;
  std::vector<SerialCollective> serial_comms;
  double recompute_flops = 0;  // part of flops() that re-runs forward work (activation recompute)
  double flops() const;
};

struct Op {
  // "ag.u3.mb0", "fwd.s4.mb1", "bwd.s4.mb1", "rs.u3", "opt", "send.act.v1.mb0"; empty when lowered without
  // names (program/lower.h LowerOptions): messages read op_label.
  std::string name;
  OpKind kind = OpKind::forward;
  StreamKind stream = StreamKind::compute;
  int unit = -1;        // FSDP unit index, -1 when not tied to one
  int segment = -1;     // compute ops: segment index; send/recv: the segment whose output (activations)
                        // or input gradient (activation_grads) travels
  int micro_batch = -1;
  int stage = -1;       // virtual pipeline stage of the op's own model chunk (compute, send, recv;
                        // 0 without pipeline parallelism; -1 for ops of no stage)
  int peer_role = -1;   // send/recv: the pipeline rank (role) at the other end
  int rendezvous = -1;  // index into StepProgram::rendezvous: ops of other roles this op runs with;
                        // a send and its receive name their message by it
  // Cost-model inputs. Compute ops: kernel work summed by kind (matrix vs vector); the engine times them
  // with the cost model. Collectives: kind, bytes (nccl-tests' S) and group.
  int work_set = -1;  // compute ops: index into StepProgram::work_sets (shared by identical ops)
  Collective collective = Collective::all_gather;
  double comm_bytes = 0;
  int group = -1;                 // index into StepProgram::groups
  double serial_comm_time_s = 0;  // TP/CP collectives inside the op (blocking, Megatron-style)
  // Filled by time_program (op_timing.h) from the cost models, or by a calibration:
  double duration_s = 0;  // total time when running alone at full rate
  double latency_s = 0;   // collectives: the part of duration_s that does not depend on bandwidth
  // Collectives: the share of this rank's NVLink and NIC bandwidth the collective uses when it runs
  // alone (1 on its bottleneck fabric, less on the other, 0 where it does not pass).
  double nvlink_load = 1, nic_load = 0;
  double sm_share = 0;      // collectives: share of the GPU's SMs their kernel holds while it runs
  OpDeps deps;              // ops (same role) that must finish before this one starts
  MemEffects alloc_at_start;
  MemEffects free_at_end;  // besides the released parameters (release_params)
  // Effects on the unit's training state:
  Payload payload = Payload::none;
  // The unit's unsharded parameters are released at the end of the op (FSDP's reshard): the executor
  // frees its buffer, the simulator StepProgram::units[unit].param_bytes of transient memory.
  bool release_params = false;
  // g > 1: on a release, a copy sharded over g ranks stays for backward (FSDP2's int
  // reshard_after_forward); on an all-gather, the parameters come from that copy, which it frees.
  int kept_shard_ranks = 0;
  bool completes_reduction = false;  // gradient collectives: the unit's gradients are fully reduced after it
};

struct RoleProgram {
  int role_ranks = 1;                   // how many ranks run this program
  std::vector<Op> ops;                  // in issue order; op ids are indices
  std::vector<std::vector<int>> streams;  // per StreamKind: op ids in stream order
  std::vector<MemEffect> resident;      // allocated before the step (sharded state, overheads)
};

// The device mesh of one pipeline rank, outermost axis first: (dp_replicate, dp_shard, cp, tp); rank =
// row-major index. Pipeline parallelism is the outermost axis: global rank = role x size() + mesh rank.
// A group of kind dp_shard holds the ranks that differ only in the dp_shard coordinate; dp_shard_cp those
// that differ in dp_shard and cp; dp_all those that differ in dp_replicate and dp_shard; reshard (FSDP2's
// int reshard_after_forward = g) the runs of g consecutive ranks of the shard group (dp_shard, or
// dp_shard_cp when cp > 1, in rank order).
struct Mesh {
  int dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1;
  int size() const { return dp_replicate * dp_shard * cp * tp; }
};

// Consecutive modules of one unit: one forward and one backward compute op per micro-batch.
struct Segment {
  int unit = 0;
  int first_module = 0;  // index into module_names(model)
  int module_count = 0;
  bool embeds_tokens = false;  // holds the embedding: its forward reads the micro-batch's tokens
  bool computes_loss = false;  // holds the head: its forward ends in the loss, its backward starts there
};

// An FSDP unit as the lowering placed it.
struct ProgramUnit {
  DataPlacement placement;  // of its parameters, reduced gradients and optimizer state
  double param_bytes = 0;   // unsharded parameters on one rank (after TP), in the param dtype (fp8 all-gather: linear weights at 1 byte)
  std::vector<std::string> modules;  // module names in forward order (core/plan.h module_names)
  int role = 0;             // the pipeline rank whose stages hold it (0 without pipeline parallelism)
  bool frozen = false;      // LoRA: base weights frozen (no gradients, no reductions, no optimizer step)
  // FSDP2's int reshard_after_forward: g > 1 ranks share the copy kept between forward and backward
  // (the release ops' kept_shard_ranks); 0 when the unit keeps none.
  int kept_shard_ranks = 0;
};

// An op of a role: members of a rendezvous.
struct OpRef {
  int role = 0;
  int op = 0;
};

struct StepProgram {
  Mesh mesh;
  int pp = 1;   // pipeline ranks = roles
  int vpp = 1;  // model chunks per pipeline rank
  std::vector<ProgramUnit> units;
  std::vector<Segment> segments;  // in forward order; Op::segment indexes them
  // Tied embeddings across pipeline stages: the embedding's unit (first stage), which the last stage
  // keeps a copy of for its head (head_unit); -1 when the head reads the embedding in its own unit.
  int tied_copy_source = -1;
  int head_unit = -1;
  std::vector<RecomputeMode> recompute;  // per block: what its backward re-runs (core/plan_settings.h)
  std::vector<ProcessGroup> groups;
  std::vector<WorkSet> work_sets;
  std::vector<RoleProgram> roles;
  // Ops of different roles that start together, one rank of each role at the same mesh point: a send
  // and its receive, or an all-reduce across pipeline ranks. An interpreter pairs them by these lists.
  std::vector<std::vector<OpRef>> rendezvous;
  double tokens_per_step = 0;  // global
  int world_size = 1;
  double model_flops_per_token = 0;
  double peak_flops_per_s = 0;  // of the compute dtype, for MFU
};

// How messages name op `id` of a role: its name, or "#<id> (<kind>)" in a program lowered without names,
// so that "op {}" reads "op fwd.s4.mb1" or "op #12 (forward)".
std::string op_label(const Op& op, int id);

// Transient bytes the op frees at its end besides free_at_end: its unit's unsharded parameters when it
// releases them. Both interpreters read releases through Op::release_params (the engine through this).
double released_param_bytes(const StepProgram& program, const Op& op);

}  // namespace fsdpx
