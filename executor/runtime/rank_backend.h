// executor/runtime/rank_backend.h — what the op interpreter (rank_runtime.h) asks of one rank's device:
// the backend owns the model's activations, the FSDP units' buffers and the communicators; the
// interpreter owns the step program, the data slicing, the loss and norm bookkeeping and the policies.
// One interface, two implementations: the CPU reference (cpu_rank_backend.h: fp32, synchronous, threads) and
// the CUDA backend (bf16 compute on streams, NCCL). Every method is called in the step program's issue
// order; an asynchronous backend enqueues the work and orders it with the program's dependencies
// (begin_op/end_op). Tensor and context parallelism live inside the backend's model (its tp and cp
// groups); the interpreter checks the collectives it issued against the program. Under pipeline
// parallelism a rank holds the units of its stages, keeps the activations of every micro-batch in
// flight, and exchanges activations and their gradients with the neighbouring stages' ranks (tp = cp = 1
// then: combining them is rejected before lowering).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/plan_settings.h"
#include "executor/runtime/adamw.h"
#include "executor/runtime/memory_tracker.h"
#include "executor/runtime/model_groups.h"
#include "executor/runtime/train_state.h"
#include "program/step_program.h"

namespace fsdpx {

// Values per all_reduce_host call, so that a count fits an int. Each call is one collective per staged
// piece (the CUDA backend stages kHostReduceStageCount values at a time in a device buffer), and a
// multi-process run pays a round trip per call: Trainer::sum_words once sent its limbs 8 at a time, which
// made a 4-process llama-tiny8 run's final state take 225,000 round trips (49 s against 0.7 s as threads).
inline constexpr int kMaxHostReduceCount = 1 << 20;

// The groups of one rank that ops of the step program name: the program's own vocabulary
// (program/step_program.h GroupKind, one definition of which mesh axes form each group). A backend is
// asked for the data-parallel ones, those adding the cp axis (dp_shard_cp: the units' shard group when
// cp > 1, program/group_members.h shard_group_kind; dp_cp: DDP's), every rank of its pipeline rank's mesh,
// under pipeline parallelism the ranks at its mesh point on every pipeline rank (pp_all), and reshard:
// FSDP2's post-forward mesh of a unit with an int reshard_after_forward = g (g consecutive ranks of the
// shard group), which the backend resolves per unit. The model's tp and cp groups are the backend's own;
// send/recv (pp_pair) name their peer and the tied all-reduce (pp_ends) is the backend's.
using MeshGroup = GroupKind;

// The communicators a backend has split off its world, one per group (null: the backend has none, e.g.
// the cp groups where cp = 1; dp_all null: the data-parallel ranks are the mesh, tp = cp = 1). `mesh`:
// every rank of this pipeline rank's mesh (the world without pipeline parallelism). ep and efsdp: expert
// parallelism's token-exchange group and the experts' own FSDP group (null at ep 1).
template <class Comm>
struct GroupCommunicators {
  Comm* mesh = nullptr;
  Comm* dp_shard = nullptr;
  Comm* dp_replicate = nullptr;
  Comm* dp_all = nullptr;
  Comm* dp_shard_cp = nullptr;
  Comm* dp_cp = nullptr;
  Comm* pp_all = nullptr;
  Comm* ep = nullptr;
  Comm* efsdp = nullptr;
};

// A backend's communicator of `group`; FSDP_CHECK fails for a group it has none of.
template <class Comm>
Comm& group_communicator(MeshGroup group, const GroupCommunicators<Comm>& c) {
  Comm* out = c.mesh;
  switch (group) {
    case MeshGroup::dp_shard: out = c.dp_shard; break;
    case MeshGroup::dp_replicate: out = c.dp_replicate; break;
    case MeshGroup::dp_all: out = c.dp_all ? c.dp_all : c.mesh; break;
    case MeshGroup::dp_shard_cp: out = c.dp_shard_cp; break;
    case MeshGroup::dp_cp: out = c.dp_cp; break;
    case MeshGroup::pp_all: out = c.pp_all; break;
    case MeshGroup::ep: out = c.ep; break;
    case MeshGroup::efsdp: out = c.efsdp; break;
    case MeshGroup::mesh_all: break;
    case MeshGroup::reshard:  // per unit: the backend's reshard_comm
    case MeshGroup::tp:
    case MeshGroup::cp:
    case MeshGroup::pp_pair:
    case MeshGroup::pp_ends: out = nullptr; break;
  }
  FSDP_CHECK(out != nullptr, "group_communicator: the backend has no communicator of this group");
  return *out;
}

class RankBackend {
 public:
  virtual ~RankBackend() = default;

  virtual int rank() const = 0;  // global rank
  // Collective over all ranks: splits the mesh groups (dp_shard, dp_replicate, ...) off the world.
  virtual void connect() = 0;
  // Initialises this rank's shards from the seed (identical whatever the world size), moments zero.
  virtual void init_params(std::uint64_t seed) = 0;
  // The units whose state this rank holds (its stages'; the last stage's copy of a tied embedding
  // counts as the embedding's unit, which it then loads but does not save).
  virtual bool holds_unit(int unit) const = 0;
  virtual UnitShardState unit_state(int unit) const = 0;  // copied to the host
  virtual void load_unit_state(int unit, const UnitShardState& s) = 0;
  // DDP: the unsharded parameters are the master copy; refresh them after init, a load or a step.
  virtual void copy_masters_to_replicas() = 0;

  // Brackets every op of the step program (id = its index in the rank's program): an asynchronous
  // backend picks op.stream and waits for op.deps here, and records op's completion in end_op.
  virtual void begin_op(int id, const Op& op) = 0;
  virtual void end_op(int id, const Op& op) = 0;

  // Parameters of a unit: all-gathered from the shards over `group`, or (`from_kept`, group reshard)
  // from the copy its last release kept over the unit's reshard group, which frees it (FSDP2's int
  // reshard_after_forward); released with `kept_bytes` (> 0: ProgramUnit::kept_shard_ranks = g ranks
  // share the kept copy; RuntimeProgram::kept_copy_bytes, in the device's dtype) of a copy staying.
  virtual void gather(int unit, MeshGroup group, bool from_kept) = 0;
  virtual void release(int unit, double kept_bytes) = 0;

  // Model, per micro-batch `mb` of the step: tokens and targets [micro_batch, seq]; segment `s` of the
  // program (rp.program.segments) forward, its units' parameters live (after the head, the micro-batch's
  // loss is kept for take_losses); backward writes the gradients of `unit`'s modules (+=) and the
  // activations' gradients below. Zero-bubble's split: backward_input computes the activations'
  // gradients and keeps what backward_weight needs to write the parameter gradients (without parameters).
  virtual void set_micro_batch(int mb, const std::int32_t* tokens, const std::int32_t* targets) = 0;
  virtual void forward(int segment, int mb) = 0;
  virtual void begin_backward(int mb, double dloss) = 0;
  virtual void backward(int segment, int unit, int mb) = 0;
  virtual void backward_input(int segment, int mb) = 0;
  virtual void backward_weight(int segment, int unit, int mb) = 0;
  // Pipeline stages: `payload` activations are segment's output (send) or input (recv), activation_grads
  // the gradient w.r.t. segment's input (send) or output (recv). `peer` is the global rank at the other
  // end; a send returns without waiting for it; messages pair by `tag` (send and receive agree on it).
  virtual void send(Payload payload, int segment, int mb, int peer, int tag) = 0;
  virtual void recv(Payload payload, int segment, int mb, int peer, int tag) = 0;
  // Waits until the step's sends were received, after the role's last op of the step: a send that
  // completes only at its receive (NCCL's beyond its buffers) must not hold up this rank's later ops,
  // or neighbouring stages that each send before they receive (1F1B's steady state) wait on each other.
  // Default: sends complete on their own (the CUDA backend's are stream-ordered).
  virtual void finish_sends() {}
  // The mean loss of every micro-batch since the last call, in order (waits for them); with cp > 1 the
  // rank's share (the cp ranks' losses add up to the mean).
  virtual std::vector<double> take_losses() = 0;
  // The tensor- and context-parallel collectives the model issued since the last call.
  virtual std::vector<IssuedCollective> take_model_collectives() = 0;

  // Gradients of a unit: reduce-scatter (sum) over `group`, then optionally an all-reduce of the
  // reduced shard over the replicas (HSDP), or an all-reduce of the whole unit (DDP);
  // finish_reduction adds the reduced shard to the accumulator.
  virtual void reduce_scatter(int unit, MeshGroup group) = 0;
  virtual void all_reduce_reduced(int unit, MeshGroup group) = 0;
  virtual void all_reduce_full(int unit, MeshGroup group) = 0;
  virtual void finish_reduction(int unit) = 0;
  // Tied embeddings across pipeline stages: sums the reduced (accumulated) gradient of the table between
  // the first stage's `unit` (the embedding's) and the last stage's copy (`unit` is the head's there).
  virtual void all_reduce_tied(int unit) = 0;
  // The first unit whose reduced gradients held a NaN or an infinity since zero_grad_shards, or -1.
  virtual int first_non_finite_unit() = 0;
  // fp16 loss scaling (the step program's unscale op): multiplies this rank's accumulated gradient
  // shards by `inv_scale` in place; true when any element was an infinity or a NaN.
  virtual bool unscale_grads(float inv_scale) = 0;

  // Optimizer: Σ g² of this rank's accumulator shards (in unit order; a tied table once, on the first
  // stage; elements of tensors every tp rank holds whole count on tp rank 0 only), a host all-reduce
  // (sum, rank order) for the norm, and AdamW on the fp32 shards; then the accumulators are zeroed.
  virtual double grad_sq_sum() = 0;
  virtual void all_reduce_host(double* buf, int count, MeshGroup group) = 0;  // 0 <= count <= kMaxHostReduceCount
  virtual void adamw(const OptimizerSettings& o, const AdamWStep& s) = 0;
  virtual void zero_grad_shards() = 0;

  // LoRA (core/lora.h): the adapters every rank holds whole. Their gradients summed over `group`, their
  // Σ g² (this rank's copy), their state. A backend without LoRA refuses a LoRA plan before these run.
  virtual void all_reduce_adapter_grads(MeshGroup /*group*/) { unsupported("LoRA"); }
  virtual double adapter_grad_sq_sum() { return 0; }
  virtual AdapterState adapter_state() const { return {}; }
  virtual void load_adapter_state(const AdapterState& /*s*/) { unsupported("LoRA"); }

  // Waits for everything enqueued (profiling takes per-op times after it).
  virtual void synchronize() = 0;
  // Fails the communicators of every rank: peers blocked in a collective throw CommAborted.
  virtual void abort(const std::string& msg) = 0;
  virtual const MemoryTracker& memory() const = 0;

 protected:
  [[noreturn]] static void unsupported(const char* what) {
    throw std::runtime_error(std::string("this backend does not run ") + what + " yet");
  }
};

struct RuntimeProgram;
class OpProfiler;
// Makes the backend of every rank of the plan's mesh that runs in this process, in rank order (rank 0
// gets the kernel profiler, null unless profiling); the Trainer's default is the CPU reference backend,
// every rank a thread (executor/session/trainer.h).
using RankBackendFactory =
    std::function<std::vector<std::unique_ptr<RankBackend>>(const RuntimeProgram&, OpProfiler* rank0_profiler)>;

}  // namespace fsdpx
