// executor/runtime/runtime_program.cpp — the interpreter's tables (see runtime_program.h).
#include "executor/runtime/runtime_program.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "core/errors.h"
#include "executor/model/block.h"
#include "program/lower.h"

namespace fsdpx {

namespace {

// The CPU model computes and stores fp32, materialises the attention probabilities and has no dropout:
// a plan saying otherwise would be simulated (times and memory) for a different program than the one run.
void check_cpu_program(const Plan& plan) {
  if (plan.precision.param != DType::fp32)
    throw ConfigError(fmt::format("plan: /mixed_precision/param_dtype: the CPU runtime computes in fp32, so the "
                                  "plan must say \"fp32\" (got \"{}\")", dtype_name(plan.precision.param)));
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
}

// The CUDA model computes in bf16 with the FlashAttention-2-style kernel (head dims 32/64/96/128) and
// reduces gradients in fp32 or bf16 as the plan says; it has no dropout.
void check_cuda_program(const Plan& plan) {
  if (plan.precision.param != DType::bf16)
    throw ConfigError(fmt::format("plan: /mixed_precision/param_dtype: the CUDA runtime computes in bf16, so the "
                                  "plan must say \"bf16\" (got \"{}\")", dtype_name(plan.precision.param)));
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
}

void check_runnable(const Plan& plan, ExecutorDevice device) {
  const Parallelism& par = plan.parallelism;
  auto reject = [](const char* path, int value, const char* what) {
    throw ConfigError(fmt::format("plan: /parallelism/{}: the runtime runs {} = 1 only (got {}); {}", path, path,
                                  value, what));
  };
  if (par.tp > 1) reject("tp", par.tp, "it does not run tensor parallelism yet");
  if (par.cp > 1) reject("cp", par.cp, "it does not run context parallelism yet");
  if (par.pp > 1) reject("pp", par.pp, "it does not run pipeline parallelism yet");
  if (device == ExecutorDevice::cpu)
    check_cpu_program(plan);
  else
    check_cuda_program(plan);
  if (plan.model.arch == Arch::gpt && plan.training.seq > plan.model.max_seq)
    throw ConfigError(fmt::format("plan: /training/seq: at most the model's max_seq {} for a learned position "
                                  "table (got {})", plan.model.max_seq, plan.training.seq));
  if (!plan.model.tied_embeddings) return;
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const auto& m = plan.units[u].modules;
    const bool emb = std::find(m.begin(), m.end(), "embedding") != m.end();
    const bool head = std::find(m.begin(), m.end(), "head") != m.end();
    if (emb != head)
      throw ConfigError(fmt::format("plan: /units/{}/modules: a tied head shares the embedding's weight, so "
                                    "\"embedding\" and \"head\" must be in one unit", u));
  }
}

template <class T>
double vec_bytes(const std::vector<T>& v) {
  return double(v.size()) * double(sizeof(T));
}

// Bytes of the CPU model's per-block buffers (executor/model/block.h), measured on allocated buffers.
struct BlockBufferBytes {
  double acts = 0, scratch = 0;
};
BlockBufferBytes block_buffer_bytes(const BlockDims& d) {
  BlockActs<float> a;
  a.allocate(d);
  BlockScratch<float> s;
  s.allocate(d);
  BlockBufferBytes b;
  for (const auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.att, &a.atty, &a.x_mid, &a.ln2, &a.ln2_mean,
                        &a.ln2_rstd, &a.fc, &a.fc_act})
    b.acts += vec_bytes(*v);
  for (const auto* v : {&s.dln, &s.datty, &s.dqkv, &s.dfc, &s.dfc_act}) b.scratch += vec_bytes(*v);
  return b;
}

// Saved and working bytes of each segment, following Transformer's buffers, each counted with the module
// whose backward uses it last (the simulator's attribution, cost_models/activations.cpp): token ids and
// targets (int32 each) with the embedding; each block's input (resid_[i]) plus its BlockActs (only the
// input when it recomputes); the final norm's input, output and statistics; probabilities [N, V].
// Backward works in the block scratch, the residual-gradient pair and, for recomputing blocks, the
// shared BlockActs and a discarded output.
void segment_bytes(RuntimeProgram& rp) {
  const Plan& p = rp.plan;
  const BlockDims d = make_block_dims(p.model, p.training.micro_batch, p.training.seq);
  const BlockBufferBytes bb = block_buffer_bytes(d);
  const double f32 = 4, nc = double(d.n * d.c) * f32;
  const double ids = 2.0 * double(d.n) * double(sizeof(std::int32_t));  // Transformer's tokens_, targets_
  const double norm_stats = (d.layernorm ? 2.0 : 1.0) * double(d.n) * f32;
  for (const Segment& s : rp.segments) {
    double saved = 0, working = 2 * nc;  // dres, dlnf
    bool block = false, recompute = false;
    for (int m = s.first_module; m < s.first_module + s.module_count; ++m) {
      if (m == 0) saved += ids;
      else if (m == rp.layout.final_norm_index()) saved += 2 * nc + norm_stats;
      else if (m == rp.layout.head_index()) saved += double(d.n * p.model.vocab) * f32;
      else {
        const bool rc = p.recompute[std::size_t(m - 1)] == RecomputeMode::full;
        saved += nc + (rc ? 0.0 : bb.acts);
        block = true;
        recompute = recompute || rc;
      }
    }
    if (block) working += bb.scratch;
    if (recompute) working += bb.acts + nc;
    rp.segment_saved_bytes.push_back(saved);
    rp.segment_working_bytes.push_back(working);
  }
}

// A unit's unsharded parameters die after its last compute op before its next all-gather (or the end
// of the step); a free op (reshard to g ranks) releases them itself.
void release_points(RuntimeProgram& rp) {
  const auto& ops = rp.program.roles[0].ops;
  rp.release_after.assign(ops.size(), 0);
  rp.replica_reduce.assign(ops.size(), 0);
  std::vector<int> last_use(rp.plan.units.size(), -1);
  for (int id = 0; id < int(ops.size()); ++id) {
    const Op& op = ops[std::size_t(id)];
    if (op.unit < 0) continue;
    int& last = last_use[std::size_t(op.unit)];
    if (op.kind == OpKind::forward || op.kind == OpKind::backward) last = id;
    if (op.kind == OpKind::all_gather && last >= 0) rp.release_after[std::size_t(last)] = 1;
    if (op.kind == OpKind::all_gather || op.kind == OpKind::free) last = -1;
    if (op.kind == OpKind::all_reduce && rp.program.groups[std::size_t(op.group)].kind == GroupKind::dp_replicate)
      for (int j = id - 1; j >= 0; --j)
        if (ops[std::size_t(j)].kind == OpKind::reduce_scatter && ops[std::size_t(j)].unit == op.unit) {
          rp.replica_reduce[std::size_t(j)] = 1;
          break;
        }
  }
  for (int last : last_use)
    if (last >= 0) rp.release_after[std::size_t(last)] = 1;
}

}  // namespace

RuntimeProgram make_runtime_program(const Plan& plan, ExecutorDevice device) {
  check_runnable(plan, device);
  RuntimeProgram rp;
  rp.plan = plan;
  rp.program = lower(plan);
  rp.layout = make_param_layout(plan.model);
  rp.segments = plan_segments(plan);
  const DataParallel dp = plan.parallelism.data_parallel;
  rp.replicated = dp == DataParallel::ddp || dp == DataParallel::zero1 || dp == DataParallel::distributed_optimizer;
  rp.shard_count = dp == DataParallel::ddp ? 1 : plan.parallelism.dp_shard;
  rp.grad_accum = plan.grad_accum();
  rp.dp_ranks = plan.parallelism.data_parallel_ranks();
  rp.module_unit.assign(std::size_t(rp.layout.num_modules()), -1);
  rp.module_slot.assign(std::size_t(rp.layout.num_modules()), -1);
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    rp.flats.push_back(make_flat_unit(rp.layout, plan.units[u].modules, rp.shard_count));
    const auto& mods = rp.flats.back().modules;
    for (std::size_t k = 0; k < mods.size(); ++k) {
      rp.module_unit[std::size_t(mods[k])] = int(u);
      rp.module_slot[std::size_t(mods[k])] = int(k);
    }
  }
  release_points(rp);
  segment_bytes(rp);
  return rp;
}

}  // namespace fsdpx
