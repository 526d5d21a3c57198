// planner/export_torchtitan_map.cpp — maps a plan's settings onto torchtitan's job-config keys
// (torchtitan/config/job_config.py; apply_fsdp and apply_ac in torchtitan's parallelize_llama.py and
// distributed/activation_checkpoint.py). Per-unit and per-block choices collapse to torchtitan's one
// setting per model: the closest setting is chosen and a note says what was lost.
#include <algorithm>
#include <array>
#include <cstdint>

#include <fmt/format.h>

#include "core/data_placement.h"
#include "core/errors.h"
#include "planner/export_torchtitan.h"
#include "planner/target.h"

namespace fsdpx {

namespace {

struct Flavor {
  const char* name;
  std::int64_t layers, hidden, heads, kv_heads, ffn_hidden;
};
// torchtitan/models/llama3/__init__.py llama3_configs: dim, n_layers, n_heads, n_kv_heads; ffn from
// ffn_dim_multiplier 1.3 / 1.3 / 1.2 and multiple_of 1024 / 4096 / 4096 (14336, 28672, 53248).
constexpr std::array<Flavor, 3> kLlama3Flavors{{
    {"8B", 32, 4096, 32, 8, 14336}, {"70B", 80, 8192, 64, 8, 28672}, {"405B", 126, 16384, 128, 8, 53248}}};

void note(TorchtitanSettings& s, const char* key, std::string text) { s.notes.push_back({key, std::move(text)}); }

// Every llama3 flavor builds RoPE with theta=500000 (same file); the flavor cannot carry another base.
constexpr double kLlama3RopeTheta = 500000.0;

void map_model(const ModelSpec& m, TorchtitanSettings& s) {
  for (const Flavor& f : kLlama3Flavors)
    if (m.arch == Arch::llama && m.layers == f.layers && m.hidden == f.hidden && m.heads == f.heads &&
        m.kv_heads == f.kv_heads && m.ffn_hidden == f.ffn_hidden) {
      s.model_name = "llama3";
      s.model_flavor = f.name;
      if (m.rope_theta != kLlama3RopeTheta)
        note(s, "model", fmt::format("the model's RoPE base is {}; torchtitan's llama3 flavors use {}",
                                     m.rope_theta, kLlama3RopeTheta));
      return;
    }
  s.model_name = m.name;
  note(s, "model", fmt::format("no torchtitan llama3 flavor has these dimensions; register one with dim={}, "
                               "n_layers={}, n_heads={}, n_kv_heads={}, ffn hidden {}, vocab_size={}",
                               m.hidden, m.layers, m.heads, m.kv_heads, m.ffn_hidden, m.vocab));
}

// torchtitan's pipeline (torchtitan/distributed/pipeline_parallel.py): single-stage schedules "GPipe" and
// "1F1B", the multi-stage "Interleaved1F1B"; the stages exactly as module_fqns_per_model_part (one list
// of module names per virtual stage, in stage order, placed on rank stage mod pp: the "loop" style). Its
// zero-bubble schedules are multi-stage ("InterleavedZeroBubble" needs two or more stages per rank), so
// ZB-H1 is written as the closest.
void map_pipeline(const Plan& p, TorchtitanSettings& s) {
  const Parallelism& par = p.parallelism;
  switch (par.pp_schedule) {
    case PipelineSchedule::gpipe: s.pp_schedule = "GPipe"; break;
    case PipelineSchedule::one_f_one_b: s.pp_schedule = "1F1B"; break;
    case PipelineSchedule::interleaved_1f1b: s.pp_schedule = "Interleaved1F1B"; break;
    case PipelineSchedule::zero_bubble:
    case PipelineSchedule::none:
      s.pp_schedule = "1F1B";
      note(s, "parallelism.pipeline_parallel_schedule",
           "ZB-H1 (zero_bubble, one stage per rank) has no torchtitan schedule: its InterleavedZeroBubble needs two "
           "or more stages per rank; written as 1F1B, whose bubble is about three times larger");
      break;
  }
  // The plan's stages, in torchtitan's module names, one list per virtual stage (model part).
  s.pp_model_parts.assign(std::size_t(virtual_stages(par.pp, par.vpp)), {});
  for (const PlanUnit& u : p.units)
    for (const std::string& m : u.modules) {
      const std::string name = m == "embedding"    ? "tok_embeddings"
                               : m == "final_norm" ? "norm"
                               : m == "head"       ? "output"
                                                   : "layers." + m.substr(6);
      s.pp_model_parts[std::size_t(u.stage)].push_back(name);
    }
}

// torchtitan has FSDP (shard), HSDP (replicate x shard) and DDP (replicate only); ZeRO-1 is not one of
// them. Its closest is FSDP that never reshards after forward: the same all-gather + reduce-scatter
// traffic per step, with gradients sharded as well (less memory than the plan, never more).
void map_data_parallel(const Plan& p, TorchtitanSettings& s) {
  const Parallelism& par = p.parallelism;
  s.tp = par.tp, s.cp = par.cp, s.pp = par.pp, s.ep = par.ep;
  s.dp_replicate = par.dp_replicate;
  s.dp_shard = par.dp_shard;
  const DataPlacement placement = data_placement(par);
  if (!is_sharded(placement.grads)) {  // DDP
    s.dp_replicate = par.data_parallel_ranks(), s.dp_shard = 1;
  } else if (!is_sharded(placement.params)) {  // ZeRO-1
    s.dp_replicate = 1, s.dp_shard = par.data_parallel_ranks();
    note(s, "parallelism.data_parallel_shard_degree",
         fmt::format("the plan uses {} (optimizer state sharded, parameters replicated), which torchtitan "
                     "cannot express; written as FSDP without resharding after forward",
                     data_parallel_name(par.data_parallel)));
  }
  // torchtitan's FSDP mesh is dp_shard x cp (parallel_dims.py: fsdp = dp_shard * cp); fsdpx shards over
  // dp_shard and keeps cp ranks as copies.
  if (par.cp > 1)
    note(s, "parallelism.context_parallel_degree",
         fmt::format("torchtitan shards parameters over dp_shard x cp = {} ranks (its fsdp mesh), where the plan "
                     "shards over dp_shard = {} and copies across cp: less memory and larger all-gathers than planned",
                     par.dp_shard * par.cp, par.dp_shard));
  if (par.pp > 1) map_pipeline(p, s);
}

bool layout_is_per_block(const Plan& p) {
  const std::vector<PlanUnit> ref = default_plan(p.model, p.cluster, p.training, p.parallelism, 1, RecomputeMode::none).units;
  return std::equal(ref.begin(), ref.end(), p.units.begin(), p.units.end(),
                    [](const PlanUnit& a, const PlanUnit& b) { return a.modules == b.modules; });
}

// torchtitan's apply_fsdp: "always" reshards every unit, "never" none, "default" (pp = 1) every block
// except the last, whose parameters backward needs first; the root (norm + output) is never resharded.
void map_reshard(const Plan& p, TorchtitanSettings& s) {
  const DataPlacement placement = data_placement(p.parallelism);
  if (!placement.reshard_after_forward) {
    s.reshard_policy = is_sharded(placement.grads) ? "never" : "default";  // DDP: "default"
    return;
  }
  std::size_t kept = 0, partial = 0;
  for (const PlanUnit& u : p.units) {
    const int g = u.reshard_after_forward == p.parallelism.dp_shard ? 1 : u.reshard_after_forward;
    kept += g == 0, partial += g > 1;
  }
  const bool last_kept = p.units.back().reshard_after_forward == 0;
  const std::size_t n = p.units.size();
  if (kept == 0 && partial == 0) s.reshard_policy = "always";
  else if (kept == n) s.reshard_policy = "never";
  else if (kept == 1 && last_kept && partial == 0) s.reshard_policy = "default";
  else {
    s.reshard_policy = 2 * kept > n ? "never" : (last_kept ? "default" : "always");
    note(s, "parallelism.fsdp_reshard_after_forward",
         fmt::format("per-unit reshard_after_forward ({} of {} units kept unsharded, {} resharded to a "
                     "smaller group) is not expressible; \"{}\" is the closest single policy",
                     kept, n, partial, s.reshard_policy));
  }
}

// torchtitan's layer-level selective AC with option "n" wraps blocks i with (i + 1) % n == 0 in a full
// checkpoint (activation_checkpoint.py _apply_layer_sac: the counter is incremented before the test).
int every_nth_full(const std::vector<RecomputeMode>& r) {
  for (std::size_t n = 1; n <= r.size(); ++n) {
    bool match = true;
    for (std::size_t i = 0; i < r.size() && match; ++i)
      match = (r[i] == RecomputeMode::full) == ((i + 1) % n == 0);
    if (match) return int(n);
  }
  return 0;
}

// selective_op is torchtitan's op-level SAC exactly (selective_ac_option = "op"). Korthikanti's selective
// (recompute the attention core) has no torchtitan counterpart; op-level SAC saves less than it (and
// than none), so "op" is the closest setting that needs no more memory than planned.
void map_recompute(const Plan& p, TorchtitanSettings& s) {
  const auto& r = p.recompute;
  const auto count = [&r](RecomputeMode m) { return std::size_t(std::count(r.begin(), r.end(), m)); };
  const std::size_t full = count(RecomputeMode::full), none = count(RecomputeMode::none);
  const std::size_t korthikanti = count(RecomputeMode::selective), op = count(RecomputeMode::selective_op);
  const std::size_t sel = korthikanti + op;
  if (full == r.size()) s.ac_mode = "full";
  else if (none == r.size()) s.ac_mode = "none";
  else if (op == r.size()) s.ac_mode = "selective", s.ac_selective_option = "op";
  else if (korthikanti == r.size()) {
    s.ac_mode = "selective", s.ac_selective_option = "op";
    note(s, "activation_checkpoint.selective_ac_option",
         "the plan's selective recompute (Korthikanti: the attention core only) has no torchtitan equivalent; "
         "op-level SAC saves less and recomputes more");
  } else if (sel == 0 && every_nth_full(r) > 0) {
    s.ac_mode = "selective", s.ac_selective_option = fmt::format("{}", every_nth_full(r));
  } else if (sel == 0) {
    // n = floor(L / full) checkpoints floor(L / n) >= full blocks: never more activation memory than planned.
    s.ac_mode = "selective", s.ac_selective_option = fmt::format("{}", r.size() / full);
    note(s, "activation_checkpoint.selective_ac_option",
         fmt::format("the plan recomputes {} chosen blocks of {}; torchtitan checkpoints every n-th block, "
                     "n = {} checkpoints at least as many", full, r.size(), s.ac_selective_option));
  } else {
    s.ac_mode = full > 0 ? "full" : "selective";
    if (s.ac_mode == "selective") s.ac_selective_option = "op";
    note(s, "activation_checkpoint.mode",
         fmt::format("per-block recompute ({} full, {} selective, {} none) is not expressible; \"{}\" on every "
                     "block is the closest that needs no more memory", full, sel, none, s.ac_mode));
  }
}

// job_config.py Training: mixed_precision_param is "bfloat16" or "float32"; mixed_precision_reduce is
// "float32" only. fp8 matmuls are torchao's float8 converter, a model-level switch.
void map_precision(const Plan& p, TorchtitanSettings& s) {
  const DType param = p.precision.param;
  s.param_dtype = param == DType::fp32 || param == DType::tf32 ? "float32" : "bfloat16";
  if (param == DType::fp16 || param == DType::tf32)
    note(s, "training.mixed_precision_param",
         fmt::format("the plan computes in {}, which torchtitan's config does not offer; {} is the closest",
                     dtype_name(param), s.param_dtype));
  if (param == DType::fp8)
    note(s, "training.mixed_precision_param",
         "the plan computes in fp8: add converters = [\"float8\"] under [model] (torchao) to match it");
  // torchao's recipes are torchtitan's; Transformer Engine's scalings have no torchtitan counterpart.
  if (p.fp8 && fp8_is_torchao(p.fp8->scaling)) s.fp8 = p.fp8;
  if (p.fp8 && !fp8_is_torchao(p.fp8->scaling))
    note(s, "model.converters",
         fmt::format("the plan scales fp8 as Transformer Engine does (\"{}\"); torchtitan's float8 converter scales "
                     "tensorwise or rowwise: written without float8", fp8_scaling_name(p.fp8->scaling)));
  s.reduce_dtype = "float32";
  if (p.precision.reduce != DType::fp32)
    note(s, "training.mixed_precision_reduce",
         fmt::format("the plan reduces gradients in {}; torchtitan's config accepts only float32 (more traffic "
                     "than planned)", dtype_name(p.precision.reduce)));
  if (!p.precision.fp32_master_weights)
    note(s, "training.mixed_precision_param",
         "the plan keeps no fp32 master weights; FSDP2 always keeps the sharded parameters in fp32");
}

void map_misc(const Plan& p, TorchtitanSettings& s) {
  if (p.optimizer.grad_clip_norm == 0)
    note(s, "training.max_norm", "the plan does not clip gradients; torchtitan always clips, so max_norm is huge");
  // Under pipeline parallelism torch's stages reduce once, after the last backward; without it every
  // micro-batch.
  const bool once = p.parallelism.pp > 1;
  if ((p.reduce_grads == ReduceGrads::last_micro_batch) != once && p.grad_accum() > 1)
    note(s, "training.global_batch_size",
         once ? "the plan reduces gradients after every micro-batch; under PP torchtitan reduces once per step"
              : "the plan reduces gradients once per step (no_sync); torchtitan reduces after every micro-batch");
  if (p.prefetch.forward != 1 || p.prefetch.backward != 1)
    note(s, "fsdp_units", fmt::format("the plan prefetches {} unit(s) in forward and {} in backward; FSDP2 under "
                                      "torchtitan prefetches one (not a config setting)",
                                      p.prefetch.forward, p.prefetch.backward));
  if (p.prefetch.max_all_gathers_in_flight != kTorchtitanAllGathersInFlight)
    note(s, "fsdp_units", fmt::format("the plan allows {} all-gathered units in flight; FSDP2 under torchtitan "
                                      "holds {} (the one in use and the prefetched one; not a config setting)",
                                      p.prefetch.max_all_gathers_in_flight, kTorchtitanAllGathersInFlight));
  if (p.parallelism.tp > 1 && !p.parallelism.sequence_parallel)
    note(s, "parallelism.tensor_parallel_degree",
         "the plan runs TP without sequence parallelism; torchtitan's TP plan always shards norms over the sequence");
}

// job_config.py Compile: enable applies torch.compile to the components ["model", "loss"] (the default).
// The plan's prediction assumed the costs of its training stack (core/framework.h); torchtitan runs its
// own eager or compiled PyTorch, so another stack's prediction does not carry over.
void map_stack(const Plan& p, TorchtitanSettings& s) {
  s.compile = p.compiled;
  if (p.framework != Framework::torchtitan)
    note(s, "compile",
         fmt::format("the plan was predicted with {}'s kernels and costs; torchtitan runs {} PyTorch, whose costs the "
                     "closest plan below is simulated with",
                     framework_name(p.framework), s.compile ? "compiled" : "eager"));
}

}  // namespace

TorchtitanSettings torchtitan_settings(const Plan& plan, const std::string& version) {
  const auto& versions = torchtitan_versions();
  if (std::find(versions.begin(), versions.end(), version) == versions.end())
    throw ConfigError(fmt::format("torchtitan {}: not a release fsdpx writes job configs for", version));
  TorchtitanSettings s;
  s.version = version;
  map_model(plan.model, s);
  if (!layout_is_per_block(plan))
    note(s, "fsdp_units", fmt::format("torchtitan wraps the embedding, each block, and norm + output in their own "
                                      "fully_shard; the plan's {} units cannot be expressed", plan.units.size()));
  map_data_parallel(plan, s);
  map_reshard(plan, s);
  map_recompute(plan, s);
  map_precision(plan, s);
  map_misc(plan, s);
  map_stack(plan, s);
  return s;
}

}  // namespace fsdpx
