// executor/runtime/runtime_program.cpp — the runtime's checks and tables (see runtime_program.h).
#include "executor/runtime/runtime_program.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "core/errors.h"
#include "core/pipeline.h"
#include "program/group_members.h"
#include "program/lower.h"

namespace fsdpx {

namespace {

// Neither model implements LoRA's adapter dropout.
void check_no_adapter_dropout(const Plan& plan, const char* runtime) {
  if (plan.lora && plan.lora->dropout > 0)
    throw ConfigError(fmt::format("plan: /lora/dropout: the {} runtime implements no adapter dropout (got {}); "
                                  "the simulator and planner accept it", runtime, plan.lora->dropout));
}

// The CPU model computes and stores fp32 (fp16 plans: with the units' parameters and gradients rounded
// to fp16 values, executor/cpu/fp16.h), materialises the attention probabilities and has no dropout:
// a plan saying otherwise would be simulated (times and memory) for a different program than the one run.
void check_cpu_program(const Plan& plan) {
  if (plan.precision.param != DType::fp32 && plan.precision.param != DType::fp16)
    throw ConfigError(fmt::format("plan: /mixed_precision/param_dtype: the CPU runtime computes in fp32 (or "
                                  "emulates fp16), so the plan must say \"fp32\" or \"fp16\" (got \"{}\")",
                                  dtype_name(plan.precision.param)));
  if (plan.precision.reduce != DType::fp32)
    throw ConfigError(fmt::format("plan: /mixed_precision/reduce_dtype: the CPU runtime reduces in fp32, so the "
                                  "plan must say \"fp32\" (got \"{}\")", dtype_name(plan.precision.reduce)));
  if (plan.attention_kernel != AttentionKernel::unfused)
    throw ConfigError(fmt::format("plan: /attention_kernel: the CPU runtime materialises the attention "
                                  "probabilities, so the plan must say \"unfused\" (got \"{}\")",
                                  attention_kernel_name(plan.attention_kernel)));
  if (plan.training.dropout > 0)
    throw ConfigError(fmt::format("plan: /training/dropout: the CPU runtime implements no dropout (got {})",
                                  plan.training.dropout));
  check_no_adapter_dropout(plan, "CPU");
}

// The CUDA model computes in bf16 or fp16 (CudaModelT<T>) with the FlashAttention-2-style kernel (head dims
// 32/64/96/128) and reduces gradients in fp32 or bf16 as the plan says; it has no dropout (LoRA's adapter
// dropout included).
void check_cuda_program(const Plan& plan) {
  if (plan.precision.param != DType::bf16 && plan.precision.param != DType::fp16)
    throw ConfigError(fmt::format("plan: /mixed_precision/param_dtype: the CUDA runtime computes in bf16 or fp16, so "
                                  "the plan must say \"bf16\" or \"fp16\" (got \"{}\")",
                                  dtype_name(plan.precision.param)));
  if (plan.precision.reduce != DType::fp32 && plan.precision.reduce != DType::bf16)
    throw ConfigError(fmt::format("plan: /mixed_precision/reduce_dtype: the CUDA runtime reduces in fp32 or bf16 "
                                  "(got \"{}\")", dtype_name(plan.precision.reduce)));
  if (plan.attention_kernel != AttentionKernel::flash2)
    throw ConfigError(fmt::format("plan: /attention_kernel: the CUDA runtime runs a FlashAttention-2-style kernel, "
                                  "so the plan must say \"flash2\" (got \"{}\")",
                                  attention_kernel_name(plan.attention_kernel)));
  const std::int64_t hd = plan.model.head_dim;
  if (hd != 32 && hd != 64 && hd != 96 && hd != 128)
    throw ConfigError(fmt::format("plan: /model/head_dim: the CUDA attention kernel takes 32, 64, 96 or 128 "
                                  "(got {})", hd));
  if (plan.training.dropout > 0)
    throw ConfigError(fmt::format("plan: /training/dropout: the CUDA runtime implements no dropout (got {})",
                                  plan.training.dropout));
  check_no_adapter_dropout(plan, "CUDA");
}

// A tied head reads the embedding's table: without pipeline parallelism both sit in one unit; across
// stages the last stage keeps a copy laid out as the embedding's unit, so the embedding is alone in it.
void check_tied_units(const Plan& plan) {
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const auto& m = plan.units[u].modules;
    const bool emb = std::find(m.begin(), m.end(), "embedding") != m.end();
    const bool head = std::find(m.begin(), m.end(), "head") != m.end();
    if (plan.parallelism.pp == 1 && emb != head)
      throw ConfigError(fmt::format("plan: /units/{}/modules: a tied head shares the embedding's weight, so "
                                    "\"embedding\" and \"head\" must be in one unit", u));
    if (plan.parallelism.pp > 1 && emb && m.size() > 1)
      throw ConfigError(fmt::format("plan: /units/{}/modules: under pipeline parallelism the last stage keeps a "
                                    "copy of a tied embedding laid out as its unit, so \"embedding\" must be "
                                    "alone in its unit", u));
  }
}

[[noreturn]] void reject(const char* path, int value, const char* what) {
  throw ConfigError(fmt::format("plan: /parallelism/{}: the runtime runs {} = 1 only (got {}); {}", path, path,
                                value, what));
}

// Tensor parallelism splits heads, KV heads (or replicates them, Megatron's kv_heads < tp), the FFN
// and the vocabulary evenly; sequence parallelism splits each micro-batch's tokens; the CPU model
// runs the collectives its step program lists, which op-level selective recompute would not match.
void check_tensor_parallel(const Plan& plan) {
  const Parallelism& par = plan.parallelism;
  const ModelSpec& m = plan.model;
  auto bad = [&](const std::string& what) {
    throw ConfigError(fmt::format("plan: /parallelism/tp: {} (tp = {})", what, par.tp));
  };
  if (m.ffn_hidden % par.tp != 0) bad(fmt::format("tp must divide the model's ffn_hidden ({})", m.ffn_hidden));
  if (m.vocab % par.tp != 0)
    bad(fmt::format("tp must divide the model's vocab ({}): the vocabulary-parallel embedding and head hold "
                    "vocab/tp rows each, without padding", m.vocab));
  if (m.kv_heads % par.tp != 0 && par.tp % m.kv_heads != 0)
    bad(fmt::format("tp and the model's kv_heads ({}) must divide one another", m.kv_heads));
  const std::int64_t tokens = plan.training.micro_batch * plan.training.seq / par.cp;
  if (par.sequence_parallel && tokens % par.tp != 0)
    bad(fmt::format("sequence parallelism splits the {} tokens of a micro-batch (micro_batch x seq / cp) across "
                    "the tp ranks, so tp must divide them", tokens));
  for (RecomputeMode r : plan.recompute)
    if (r == RecomputeMode::selective_op)
      throw ConfigError("plan: /recompute: the CPU runtime does not run op-level selective recompute "
                        "(\"selective_op\") with tp > 1: its step program re-runs tensor-parallel collectives the "
                        "CPU model does not; use \"none\", \"selective\" or \"full\"");
}

void check_runnable(const Plan& plan, ExecutorDevice device) {
  const Parallelism& par = plan.parallelism;
  if (device == ExecutorDevice::cuda && par.tp > 1)
    reject("tp", par.tp, "the CUDA backend does not run tensor parallelism yet (the CPU backend does)");
  if (device == ExecutorDevice::cuda && par.cp > 1)
    reject("cp", par.cp, "the CUDA backend does not run context parallelism yet (the CPU backend does)");
  if (par.pp > 1 && par.tp * par.cp > 1)
    throw ConfigError(fmt::format("plan: /parallelism/pp: the runtime runs pipeline parallelism with tp = cp = 1 "
                                  "only (got pp {}, tp {}, cp {})", par.pp, par.tp, par.cp));
  if (par.tp > 1) check_tensor_parallel(plan);
  if (device == ExecutorDevice::cpu)
    check_cpu_program(plan);
  else
    check_cuda_program(plan);
  if (plan.model.arch == Arch::gpt && plan.training.seq > plan.model.max_seq)
    throw ConfigError(fmt::format("plan: /training/seq: at most the model's max_seq {} for a learned position "
                                  "table (got {})", plan.model.max_seq, plan.training.seq));
  if (plan.model.tied_embeddings) check_tied_units(plan);
}

}  // namespace

PipelinePlace pipeline_place(const RuntimeProgram& rp, int rank) {
  const int mesh = rp.program.mesh.size();
  FSDP_CHECK(rank >= 0 && rank < mesh * rp.program.pp, "runtime: rank outside the world");
  return PipelinePlace{rank / mesh, rank % mesh};
}

int global_rank(const RuntimeProgram& rp, int role, int mesh_rank) { return role * rp.program.mesh.size() + mesh_rank; }

int unit_role(const RuntimeProgram& rp, int unit) {
  return stage_rank(rp.plan.units[std::size_t(unit)].stage, rp.program.pp);
}

int tied_copy_source(const RuntimeProgram& rp) {
  if (rp.program.pp == 1 || !rp.plan.model.tied_embeddings) return -1;
  for (std::size_t u = 0; u < rp.plan.units.size(); ++u)
    if (rp.plan.units[u].modules == std::vector<std::string>{"embedding"}) return int(u);
  FSDP_CHECK(false, "runtime: a tied embedding outside a unit of its own (checked before lowering)");
  return -1;
}

RankShard rank_shard(const RuntimeProgram& rp, int rank) {
  const MeshCoord at = mesh_coord(rp.program.mesh, pipeline_place(rp, rank).mesh_rank);
  return {at.dp_shard, at.dp_replicate, rp.shard_count > 1 ? at.dp_shard : 0};
}

bool replicated_params(const RuntimeProgram& rp, int unit) {
  return !is_sharded(rp.program.units[std::size_t(unit)].placement.params);
}

bool master_is_replica(const RuntimeProgram& rp, int unit) {
  return replicated_params(rp, unit) && !is_sharded(rp.program.units[std::size_t(unit)].placement.optimizer);
}

ModelParallel model_parallel(const RuntimeProgram& rp, int rank) {
  const MeshCoord at = mesh_coord(rp.program.mesh, pipeline_place(rp, rank).mesh_rank);
  const Parallelism& par = rp.plan.parallelism;
  return ModelParallel{par.tp, at.tp, par.cp, at.cp, par.sequence_parallel};
}

int data_parallel_index(const RuntimeProgram& rp, int rank) {
  const MeshCoord at = mesh_coord(rp.program.mesh, pipeline_place(rp, rank).mesh_rank);
  return at.dp_replicate * rp.program.mesh.dp_shard + at.dp_shard;
}

RuntimeProgram make_runtime_program(const Plan& plan, ExecutorDevice device) {
  check_runnable(plan, device);
  RuntimeProgram rp;
  rp.plan = plan;
  rp.program = lower(plan);
  rp.layout = make_param_layout(plan.model);
  // Checkpoints hold one shard count for the run: every unit's optimizer state is placed alike.
  FSDP_CHECK(!rp.program.units.empty(), "runtime: a program without units");
  const Placement optimizer = rp.program.units.front().placement.optimizer;
  for (const ProgramUnit& u : rp.program.units)
    FSDP_CHECK(u.placement.optimizer == optimizer, "runtime: units with different optimizer placements");
  rp.shard_count = is_sharded(optimizer) ? plan.parallelism.dp_shard : 1;
  rp.grad_accum = plan.grad_accum();
  rp.dp_ranks = plan.parallelism.data_parallel_ranks();
  for (int t = 0; t < plan.parallelism.tp; ++t) rp.tp_layouts.push_back(make_param_layout(plan.model, TpSlice{plan.parallelism.tp, t}));
  for (const PlanUnit& u : plan.units) {
    rp.flats.push_back(make_flat_unit(rp.tp_layouts.front(), u.modules, rp.shard_count));  // the same on every tp rank
    rp.full_flats.push_back(make_flat_unit(rp.layout, u.modules, rp.shard_count));
  }
  return rp;
}

}  // namespace fsdpx
