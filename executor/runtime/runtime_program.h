// executor/runtime/runtime_program.h — what every rank's interpreter reads, built once by the session
// (executor/session/runtime_program_from_plan.cpp, the one place that reads the plan): the step program
// (program/lower.h: ops with their effects on the training state, units with their data-parallel
// placements, pipeline ranks, frozen-ness and kept copies, segments, the tied copy, recompute), the
// run's settings that are not the schedule (model, batch geometry, optimizer, precision, loss scaling,
// LoRA) and the flat layout of each unit. Nothing here re-derives the schedule: when parameters are
// released and when a reduction is complete are fields of the ops. Under pipeline parallelism rank r
// runs role r / mesh size (its pipeline rank) at mesh point r mod mesh size, and holds only the units
// of its stages. Leaves out timing: backends decide how ops overlap.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/attention_kernel.h"
#include "core/executor_device.h"
#include "core/fp8.h"
#include "core/lora.h"
#include "core/loss_scale.h"
#include "core/model_spec.h"
#include "core/plan_settings.h"
#include "executor/runtime/model_groups.h"
#include "executor/runtime/param_layout.h"
#include "program/step_program.h"

namespace fsdpx {

// What a run needs from its plan besides the step program, copied once by the session.
struct RunSettings {
  ModelSpec model;
  TrainingSettings training;
  Parallelism parallelism;  // the degrees the program's mesh and pipeline ranks were lowered from
  MixedPrecision precision;
  OptimizerSettings optimizer;
  std::optional<LossScaleSettings> loss_scale;  // fp16 loss scaling; absent: none
  std::optional<LoraSettings> lora;             // absent: full training
  std::optional<Fp8Settings> fp8;               // fp8 linear GEMMs (core/fp8.h); absent: none
  // The plan's attention kernel: the CUDA block runs tensor_core or cuda_core by it (the CPU one, unfused).
  AttentionKernel attention_kernel = AttentionKernel::unfused;
};

struct RuntimeProgram {
  RunSettings settings;
  StepProgram program;
  ParamLayout layout;                      // the full model: checkpoints and weight files address it
  std::vector<ParamLayout> tp_layouts;     // per tp rank, its tensor-parallel slices (tp = 1: layout)
  std::vector<ParamLayout> ep_layouts;     // ep > 1 (tp = 1): per ep rank, its local experts (EpSlice)
  std::vector<FlatUnitLayout> flats;       // per unit on one rank (its tp slices), padded to shard_count shards
  std::vector<FlatUnitLayout> full_flats;  // per unit of the full model, padded likewise (the state's format)
  // Per unit: the bytes of the copy a release keeps for backward (FSDP2's int reshard_after_forward,
  // ProgramUnit::kept_shard_ranks = g > 1), in the device's storage dtype (fp32 on the CPU, the 16-bit
  // compute dtype on CUDA) over the padded flat unit; 0 when it keeps none.
  std::vector<double> kept_copy_bytes;
  // Shards of every unit's optimizer state: its shard group's ranks, dp_shard x cp (program/group_members.h
  // shard_group_kind), or 1 when it is replicated (DDP).
  int shard_count = 1;
  std::int64_t grad_accum = 1;
  int dp_ranks = 1;
};

// The parameter layout of a rank at `par`: its ep rank's under expert parallelism, else its tp rank's.
inline const ParamLayout& rank_layout(const RuntimeProgram& rp, const ModelParallel& par) {
  return par.ep > 1 ? rp.ep_layouts[std::size_t(par.ep_rank)] : rp.tp_layouts[std::size_t(par.tp_rank)];
}

// Where a global rank sits: its pipeline rank (the role it runs) and its point on the role's mesh.
struct PipelinePlace {
  int role = 0;
  int mesh_rank = 0;
};
PipelinePlace pipeline_place(const RuntimeProgram& rp, int rank);
int global_rank(const RuntimeProgram& rp, int role, int mesh_rank);
// The pipeline rank whose stages hold `unit` (0 without pipeline parallelism): the program's.
inline int unit_role(const RuntimeProgram& rp, int unit) { return rp.program.units[std::size_t(unit)].role; }
// Tied embeddings across pipeline stages: the embedding's unit (first stage), whose layout the last
// stage's copy of the table repeats; -1 when the head reads the embedding in its own unit.
inline int tied_copy_source(const RuntimeProgram& rp) { return rp.program.tied_copy_source; }
// This rank's place in the model-parallel groups, from its mesh coordinates.
ModelParallel model_parallel(const RuntimeProgram& rp, int rank);
// The data-parallel index of a rank (rep·dp_shard + shard): which sequences of each micro-batch it reads.
int data_parallel_index(const RuntimeProgram& rp, int rank);
// Where global rank `rank` sits on its stage's data-parallel mesh, and which shard of every unit it owns (0 when
// the optimizer state is replicated).
struct RankShard {
  int shard_index = 0;    // its place in the shard group: dp_shard coordinate x cp + cp coordinate
  int replica_index = 0;  // dp_replicate coordinate
  int unit_shard = 0;     // shard_index, or 0 when the optimizer state is replicated
};
RankShard rank_shard(const RuntimeProgram& rp, int rank);
// The mesh rank of replica 0 holding shard `shard` (0 when replicated) of tp rank `tp`'s slices.
int shard_owner_mesh_rank(const RuntimeProgram& rp, int shard, int tp);

// Expert parallelism: the size of the experts' FSDP group (efsdp, program/group_members.h) and the
// rank's index in it; 1 and 0 at ep 1.
struct ExpertGroupPlace {
  int efsdp_ranks = 1, efsdp_index = 0;
};
ExpertGroupPlace expert_group_place(const RuntimeProgram& rp, int rank);

// Unsharded parameters and gradients that live for the whole run (replicated parameters: DDP, ZeRO-1).
bool replicated_params(const RuntimeProgram& rp, int unit);
// The unsharded parameters are the master copy (DDP: parameters and optimizer state replicated), so
// they are refreshed from it after init, a load or a step.
bool master_is_replica(const RuntimeProgram& rp, int unit);

// Which backend will run the program (ExecutorDevice, core/backend_capabilities.h): each computes one way,
// and a plan saying otherwise would be simulated for another program than the one run.

struct Plan;
// Lowers the plan (once) and prepares the interpreter's tables; defined by the session
// (executor/session/runtime_program_from_plan.cpp), which alone reads the plan. Throws ConfigError "plan: /path: ..." for
// plans the runtime cannot run on `device` (pp > 1 together with tp or cp; tp or cp > 1 on
// CUDA; degrees that do not split the model; another precision or attention kernel, a tied head apart
// from its embedding without pipeline parallelism or a tied embedding sharing its unit with it, seq
// beyond the position table).
RuntimeProgram make_runtime_program(const Plan& plan, ExecutorDevice device = ExecutorDevice::cpu);

}  // namespace fsdpx
