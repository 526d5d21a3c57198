// core/plan_validate.cpp — consistency of a plan with its model and cluster: degrees multiply to the
// world size, batch and sequence splits are whole, units cover every module once in forward order,
// reshard and recompute settings fit. Errors name the JSON path of the offending value. Leaves out
// anything that needs the cost models (memory fit, speed): that is the simulator's and planner's job.
#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "core/checked_math.h"
#include "core/data_placement.h"
#include "core/pipeline.h"
#include "core/json_reader.h"
#include "core/model_spec_moe.h"
#include "core/plan.h"

namespace fsdpx {

namespace {

struct Checker {
  const Plan& p;
  const std::string& file;
  void require(bool ok, const std::string& path, std::string_view what) const {
    if (!ok) throw_config_error(file, path, what);
  }
};

void check_degrees(const Checker& c) {
  const Parallelism& par = c.p.parallelism;
  for (auto [value, key] : {std::pair{par.dp_replicate, "dp_replicate"}, {par.dp_shard, "dp_shard"}, {par.tp, "tp"},
                            {par.cp, "cp"}, {par.pp, "pp"}, {par.vpp, "vpp"}})
    c.require(value >= 1, fmt::format("/parallelism/{}", key), fmt::format("expected an integer >= 1, got {}", value));
  // torchtitan ParallelDims._validate: "Invalid parallel dims: dp_replicate(..) * dp_shard(..) * cp(..) *
  // tp(..) * pp(..) != WORLD_SIZE(..)" — the same arithmetic, against the cluster in the plan. Both
  // products are computed overflow-checked before world_size() (an int) is trusted.
  const ClusterSpec& cl = c.p.cluster;
  const auto cluster_world = try_product({cl.gpus_per_node, cl.nodes});
  const auto world = try_product({par.dp_replicate, par.dp_shard, par.tp, par.cp, par.pp});
  c.require(cluster_world && *cluster_world <= input_range::kDegree.max, "/cluster",
            fmt::format("{} nodes x {} GPUs per node is more than {} ranks", cl.nodes, cl.gpus_per_node,
                        input_range::kDegree.max));
  // A cluster whose last node is partly used (gpus > 0) has that many ranks.
  const std::int64_t cluster_ranks = cl.gpus > 0 ? std::int64_t(cl.gpus) : *cluster_world;
  c.require(world == cluster_ranks, "/parallelism",
            fmt::format("dp_replicate ({}) x dp_shard ({}) x tp ({}) x cp ({}) x pp ({}) = {}, but cluster \"{}\" has "
                        "{} nodes x {} GPUs per node = {} ranks{}",
                        par.dp_replicate, par.dp_shard, par.tp, par.cp, par.pp,
                        world ? fmt::to_string(*world) : std::string("more than 2^63"), cl.name, cl.nodes,
                        cl.gpus_per_node, *cluster_world,
                        cl.gpus > 0 ? fmt::format(", of which it uses {}", cl.gpus) : std::string()));
  // Megatron-LM (arXiv 1909.08053 §3) splits attention by heads and keeps TP inside a node's NVLink domain.
  c.require(cl.gpus_per_node % par.tp == 0, "/parallelism/tp",
            fmt::format("tp ({}) must divide gpus_per_node ({}): tensor parallelism stays inside a node", par.tp,
                        cl.gpus_per_node));
  c.require(c.p.model.heads % par.tp == 0, "/parallelism/tp",
            fmt::format("tp ({}) must divide the model's attention heads ({})", par.tp, c.p.model.heads));
  // Megatron-LM's column-parallel MLP splits ffn_hidden by tp (as fsdpx estimate requires).
  c.require(c.p.model.ffn_hidden % par.tp == 0, "/parallelism/tp",
            fmt::format("tp ({}) must divide the model's ffn_hidden ({})", par.tp, c.p.model.ffn_hidden));
}

void check_data_parallel(const Checker& c) {
  const Parallelism& par = c.p.parallelism;
  const char* name = data_parallel_name(par.data_parallel);
  if (par.data_parallel == DataParallel::hsdp)
    c.require(par.dp_replicate > 1, "/parallelism/data_parallel",
              "hsdp replicates across dp_replicate, which is 1: set dp_replicate > 1 or use \"fsdp_full_shard\"");
  const bool fsdp = par.data_parallel == DataParallel::fsdp_full_shard ||
                    par.data_parallel == DataParallel::fsdp_shard_grad_op;
  c.require(!fsdp || par.dp_replicate == 1, "/parallelism/data_parallel",
            fmt::format("\"{}\" shards over every data-parallel rank but dp_replicate is {}: use \"hsdp\" to shard "
                        "within dp_shard ({}) and replicate across dp_replicate, or fold dp_replicate into dp_shard",
                        name, par.dp_replicate, par.dp_shard));
}

// Pipeline degrees and schedule. Virtual stages exist only in the interleaved schedule (Narayanan et al.
// 2021, arXiv 2104.04473 §2.2.1); interleaving with one chunk per rank is plain 1F1B.
void check_pipeline(const Checker& c) {
  const Parallelism& par = c.p.parallelism;
  const char* schedule = pipeline_schedule_name(par.pp_schedule);
  if (par.pp == 1)
    c.require(par.pp_schedule == PipelineSchedule::none, "/parallelism/pp_schedule",
              fmt::format("pp is 1, so pp_schedule must be \"none\", got \"{}\"", schedule));
  else
    c.require(par.pp_schedule != PipelineSchedule::none, "/parallelism/pp_schedule",
              fmt::format("pp ({}) > 1 needs a schedule: gpipe, 1f1b, interleaved_1f1b or zero_bubble", par.pp));
  if (par.vpp > 1)
    c.require(par.pp_schedule == PipelineSchedule::interleaved_1f1b, "/parallelism/vpp",
              fmt::format("vpp ({}) > 1 needs pp_schedule \"interleaved_1f1b\", got \"{}\"", par.vpp, schedule));
  if (par.pp_schedule == PipelineSchedule::interleaved_1f1b)
    c.require(par.vpp > 1, "/parallelism/vpp",
              "interleaved_1f1b needs vpp > 1 model chunks per pipeline rank (with one chunk it is \"1f1b\")");
}

// Micro-batches per step against the schedule. Megatron-LM's interleaved schedule runs micro-batches in
// groups of pp per model chunk (microbatch_group_size_per_vp_stage defaults to pp,
// megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving) and
// rejects a remainder. GPipe, 1F1B and ZB-H1 take any number: with fewer than pp the warm-up is cut
// short (Megatron's get_pp_rank_microbatches caps it at the micro-batches; torchtitan only warns).
void check_micro_batches(const Checker& c) {
  const Parallelism& par = c.p.parallelism;
  if (par.pp_schedule != PipelineSchedule::interleaved_1f1b) return;
  const std::int64_t m = c.p.grad_accum();
  c.require(m % par.pp == 0, "/training/global_batch",
            fmt::format("micro-batches per step ({} = global_batch {} / (micro_batch {} x data-parallel ranks {})) "
                        "must be divisible by pp ({}) for \"interleaved_1f1b\" (Megatron-LM runs them in groups "
                        "of pp per model chunk)", m, c.p.training.global_batch, c.p.training.micro_batch,
                        par.data_parallel_ranks(), par.pp));
}

void check_training(const Checker& c) {
  const TrainingSettings& t = c.p.training;
  const Parallelism& par = c.p.parallelism;
  c.require(t.seq <= c.p.model.max_seq, "/training/seq",
            fmt::format("seq ({}) exceeds the model's max_seq ({})", t.seq, c.p.model.max_seq));
  for (auto [value, key, range] : {std::tuple{t.seq, "seq", input_range::kMaxSeq},
                                   {t.micro_batch, "micro_batch", input_range::kMicroBatch},
                                   {t.global_batch, "global_batch", input_range::kGlobalBatch}})
    c.require(value >= range.min && value <= range.max, fmt::format("/training/{}", key),
              fmt::format("expected an integer in [{}, {}] (docs/input-ranges.md), got {}", range.min, range.max, value));
  const std::int64_t per_step = t.micro_batch * par.data_parallel_ranks();  // <= 2^20 x 2^28: no overflow
  c.require(t.global_batch % per_step == 0, "/training/global_batch",
            fmt::format("global_batch ({}) must be divisible by micro_batch ({}) x dp_replicate ({}) x dp_shard ({}) "
                        "= {} sequences per micro-step, so that gradient accumulation is a whole number",
                        t.global_batch, t.micro_batch, par.dp_replicate, par.dp_shard, per_step));
  c.require(t.dropout >= 0 && t.dropout < 1, "/training/dropout",
            fmt::format("expected a probability in [0, 1), got {}", t.dropout));
  // Load-balanced causal context parallelism cuts the sequence into 2·cp chunks, rank r taking chunks r
  // and 2·cp-1-r (Megatron-Core context parallel; torchtitan's round-robin load balancer).
  if (par.cp > 1)
    c.require(t.seq % (2 * par.cp) == 0, "/training/seq",
              fmt::format("seq ({}) must be divisible by 2 x cp = {} for load-balanced context parallelism", t.seq,
                          2 * par.cp));
}

std::string unit_path(std::size_t u) { return fmt::format("/units/{}", u); }
std::string module_path(std::size_t u, std::size_t m) { return fmt::format("/units/{}/modules/{}", u, m); }

// Every module exactly once; returns module name -> unit index.
std::map<std::string, std::size_t> check_unit_coverage(const Checker& c, const std::vector<std::string>& names) {
  const auto& units = c.p.units;
  c.require(!units.empty(), "/units", "expected at least one unit");
  std::map<std::string, std::string> seen_at;  // module -> path of its first mention
  std::map<std::string, std::size_t> unit_of;
  for (std::size_t u = 0; u < units.size(); ++u) {
    c.require(!units[u].modules.empty(), unit_path(u) + "/modules", "expected at least one module name");
    for (std::size_t m = 0; m < units[u].modules.size(); ++m) {
      const std::string& mod = units[u].modules[m];
      const bool known = std::find(names.begin(), names.end(), mod) != names.end();
      c.require(known, module_path(u, m),
                fmt::format("unknown module \"{}\" (this model has embedding, block.0 ... block.{}, final_norm, head)",
                            mod, c.p.model.layers - 1));
      const auto [it, fresh] = seen_at.emplace(mod, module_path(u, m));
      c.require(fresh, module_path(u, m),
                fmt::format("module \"{}\" is repeated: it is already in {}", mod, it->second));
      unit_of[mod] = u;
    }
  }
  for (const std::string& mod : names)
    c.require(seen_at.contains(mod), "/units",
              fmt::format("module \"{}\" is in no unit: every module of the model must be in exactly one unit", mod));
  return unit_of;
}

// Units hold consecutive modules in forward order. A tied embedding shares its weight with the head, so
// it sits in the head's unit (one FlatParameter owns a shared parameter, FSDP1 paper arXiv 2304.11277 §3)
// and is left out of the order check. An untied embedding may sit there too: torchtitan's root
// fully_shard(model) owns every parameter outside the blocks (parallelize_llama.py apply_fsdp). Under
// pipeline parallelism the embedding runs on the first stage and the head on the last: each holds a copy
// of the shared weight and the two gradients are all-reduced between the stages before the optimizer
// step (Megatron-LM's embedding group, megatron/core/distributed/finalize_model_grads.py,
// _allreduce_word_embedding_grads), so the embedding keeps its place in forward order.
void check_units(const Checker& c) {
  const std::vector<std::string> names = module_names(c.p.model);
  const auto unit_of = check_unit_coverage(c, names);
  const bool tied = (c.p.model.tied_embeddings && c.p.parallelism.pp == 1) ||
                    unit_of.at("embedding") == unit_of.at("head");
  if (tied && unit_of.at("embedding") != unit_of.at("head")) {
    const auto& mods = c.p.units[unit_of.at("embedding")].modules;
    const auto m = static_cast<std::size_t>(std::find(mods.begin(), mods.end(), "embedding") - mods.begin());
    c.require(false, module_path(unit_of.at("embedding"), m),
              fmt::format("with tied_embeddings the embedding shares its weight with the head, so it must be in the "
                          "same unit as \"head\" ({})", unit_path(unit_of.at("head"))));
  }
  std::size_t next = tied ? 1 : 0;  // index into names of the module expected next
  for (std::size_t u = 0; u < c.p.units.size(); ++u)
    for (std::size_t m = 0; m < c.p.units[u].modules.size(); ++m) {
      const std::string& mod = c.p.units[u].modules[m];
      if (tied && mod == "embedding") continue;
      c.require(mod == names[next], module_path(u, m),
                fmt::format("expected \"{}\" here, got \"{}\": units hold consecutive modules in forward order "
                            "(embedding, block.0, ..., final_norm, head)", names[next], mod));
      ++next;
    }
}

// Pipeline stages of the units: each in [0, pp x vpp), non-decreasing in forward order (a stage is a
// contiguous run of modules), none empty. With units in forward order this puts the embedding on the
// first stage and the final norm and head on the last (Megatron-LM's pre_process / post_process stages;
// torchtitan's first and last model part).
void check_stages(const Checker& c) {
  const Parallelism& par = c.p.parallelism;
  // Every stage holds a unit, so pp x vpp (each up to 2^28: computed in 64 bits) is at most the unit count.
  const std::int64_t stages64 = std::int64_t(par.pp) * par.vpp;
  c.require(par.pp == 1 || stages64 <= std::int64_t(c.p.units.size()), "/parallelism/vpp",
            fmt::format("pp x vpp = {} virtual stages, but the plan has {} units: every stage runs at least one",
                        stages64, c.p.units.size()));
  const int stages = virtual_stages(par.pp, par.vpp);
  std::vector<int> units_on(std::size_t(stages), 0);
  int previous = 0;
  for (std::size_t u = 0; u < c.p.units.size(); ++u) {
    const int s = c.p.units[u].stage;
    const std::string path = unit_path(u) + "/stage";
    if (par.pp == 1) {
      c.require(s == 0, path, fmt::format("pp is 1, so every unit is on stage 0, got {}", s));
      continue;
    }
    c.require(s >= 0 && s < stages, path,
              fmt::format("expected a virtual stage in [0, pp x vpp = {}), got {}", stages, s));
    c.require(s >= previous, path,
              fmt::format("stage {} after stage {}: stages hold consecutive modules, so units' stages never "
                          "decrease in forward order", s, previous));
    previous = s;
    ++units_on[std::size_t(s)];
  }
  if (par.pp == 1) return;
  for (int s = 0; s < stages; ++s) {
    const char* role = s == 0 ? " (the first stage runs the embedding)"
                              : s + 1 == stages ? " (the last stage runs the final norm, the head and the loss)" : "";
    c.require(units_on[std::size_t(s)] > 0, "/units",
              fmt::format("virtual stage {} of {} holds no unit{}: every stage runs at least one module", s, stages,
                          role));
  }
}

// FSDP2 fully_shard(reshard_after_forward=int): reshard to a smaller world size that divides the shard
// group (torch/distributed/fsdp/_fully_shard/_fully_shard.py docstring; like ZeRO++ hpZ, arXiv 2306.10209),
// dp_shard x cp (program/group_members.h shard_group_kind).
void check_reshard(const Checker& c) {
  const Parallelism& par = c.p.parallelism;
  const bool reshards = data_placement(par).reshard_after_forward;
  for (std::size_t u = 0; u < c.p.units.size(); ++u) {
    const int g = c.p.units[u].reshard_after_forward;
    const std::string path = unit_path(u) + "/reshard_after_forward";
    c.require(g >= 0, path, fmt::format("expected true, false or an integer >= 1, got {}", g));
    c.require(g <= 1 || par.dp_shard * par.cp % g == 0, path,
              fmt::format("{} must be true, false or a divisor of dp_shard x cp ({}) greater than 1", g,
                          par.dp_shard * par.cp));
    c.require(reshards || g == 0, path,
              fmt::format("data_parallel \"{}\" keeps parameters unsharded between forward and backward, so "
                          "reshard_after_forward must be false", data_parallel_name(par.data_parallel)));
  }
}

void check_settings(const Checker& c) {
  const Prefetch& pf = c.p.prefetch;
  c.require(pf.forward >= 0, "/prefetch/forward", fmt::format("expected an integer >= 0, got {}", pf.forward));
  c.require(pf.backward >= 0, "/prefetch/backward", fmt::format("expected an integer >= 0, got {}", pf.backward));
  c.require(pf.max_all_gathers_in_flight >= 1, "/prefetch/max_all_gathers_in_flight",
            fmt::format("expected an integer >= 1, got {}", pf.max_all_gathers_in_flight));
  c.require(static_cast<std::int64_t>(c.p.recompute.size()) == c.p.model.layers, "/recompute",
            fmt::format("expected one entry per block ({} blocks), got {}", c.p.model.layers, c.p.recompute.size()));
}

void check_optimizer(const Checker& c) {
  const OptimizerSettings& o = c.p.optimizer;
  auto in = [&c](bool ok, const char* key, std::string_view range, double v) {
    c.require(ok, fmt::format("/optimizer/{}", key), fmt::format("expected {}, got {}", range, v));
  };
  auto within = [&in](NumberRange r, const char* key, double v) {
    in(v >= r.min && v <= r.max, key, fmt::format("a number in [{}, {}] (docs/input-ranges.md)", r.min, r.max), v);
  };
  within(input_range::kLearningRate, "lr", o.lr);
  in(o.beta1 >= 0 && o.beta1 < 1, "beta1", "a number in [0, 1)", o.beta1);
  in(o.beta2 >= 0 && o.beta2 < 1, "beta2", "a number in [0, 1)", o.beta2);
  within(input_range::kAdamEps, "eps", o.eps);
  within(input_range::kWeightDecay, "weight_decay", o.weight_decay);
  within(input_range::kGradClipNorm, "grad_clip_norm", o.grad_clip_norm);
  in(o.min_lr_ratio >= 0 && o.min_lr_ratio <= 1, "min_lr_ratio", "a number in [0, 1]", o.min_lr_ratio);
  c.require(o.total_steps >= 1 && o.total_steps <= input_range::kSteps.max, "/optimizer/total_steps",
            fmt::format("expected an integer in [1, {}], got {}", input_range::kSteps.max, o.total_steps));
  c.require(o.warmup_steps >= 0 && o.warmup_steps <= o.total_steps, "/optimizer/warmup_steps",
            fmt::format("expected 0 <= warmup_steps <= total_steps ({}), got {}", o.total_steps, o.warmup_steps));
}

// torch.compile is a property of the PyTorch stacks (torchtitan's apply_compile, llm-foundry's compile
// config); fsdpx's executor and Megatron/Transformer Engine run their own fused kernels.
void check_framework(const Checker& c) {
  c.require(!c.p.compiled || framework_can_compile(c.p.framework), "/compiled",
            fmt::format("framework \"{}\" does not run under torch.compile; compiled applies to torchtitan and "
                        "llm-foundry", framework_name(c.p.framework)));
}

// cuDNN's fused attention is timed by the GPU file's own cuDNN curves; a GPU without them cannot run it.
void check_attention_kernel(const Checker& c) {
  c.require(c.p.attention_kernel != AttentionKernel::cudnn || !c.p.cluster.gpu.cudnn_attention_efficiency.points.empty(),
            "/attention_kernel",
            fmt::format("GPU {} has no cuDNN attention curve (cudnn_attention_efficiency); use flash2",
                        c.p.cluster.gpu.name));
}

}  // namespace

void validate_plan(const Plan& p, const std::string& file) {
  check_expert_parallel(p.model, p.parallelism, p.moe_routing, file);  // before the refusal: ep's own errors
  refuse_unsimulated_model(p.model, file, "/model");
  if (p.model.is_moe() && p.fp8)
    throw_config_error(file, "/fp8", fmt::format("model {}: fp8 training of mixture-of-experts blocks (fp8 grouped "
                                                 "expert GEMMs and dispatch) is not modelled yet: issue 30",
                                                 p.model.name));
  const Checker c{p, file};
  check_degrees(c);
  check_data_parallel(c);
  check_pipeline(c);
  check_training(c);
  check_micro_batches(c);
  check_units(c);
  check_stages(c);
  check_reshard(c);
  check_settings(c);
  check_optimizer(c);
  check_loss_scale(p, file);
  check_fp8(p, file);
  check_framework(c);
  check_attention_kernel(c);
  validate_lora(p, file);
}

}  // namespace fsdpx
