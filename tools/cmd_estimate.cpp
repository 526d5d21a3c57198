// tools/cmd_estimate.cpp — `fsdpx estimate`: analytic per-GPU memory and a step-time lower bound for
// a model on a cluster with given parallelism degrees.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "cost_models/estimate.h"
#include "tools/cli_options.h"
#include "tools/cluster_size.h"
#include "tools/commands.h"
#include "tools/estimate_report.h"
#include "tools/main_output.h"
#include "tools/lora_options.h"

namespace fsdpx {

namespace {

struct EstimateOptions {
  std::string model;
  std::string cluster;
  std::optional<int> nodes;
  std::optional<int> world_size;
  std::optional<int> dp_shard;
  int dp_replicate = 1;
  int tp = 1;
  int cp = 1;
  bool no_sequence_parallel = false;
  ShardingMode mode = ShardingMode::zero3;
  std::int64_t micro_batch = 1;
  std::int64_t seq = 0;  // 0: the smaller of 8192 and the model's max_seq
  std::int64_t grad_accum = 1;
  Recompute recompute = Recompute::none;
  DType param_dtype = DType::bf16;
  DType reduce_dtype = DType::fp32;
  std::int64_t blocks_per_unit = 1;
  int prefetch = 1;
  OutputFormat format = OutputFormat::text;
  std::string out;  // -o
  LoraOptions lora;
  std::optional<Fp8Scaling> fp8;  // --fp8 SCALING
  bool fp8_all_gather = false;
};

void run_estimate(const EstimateOptions& o) {
  const ModelSpec m = load_model(o.model);
  const ClusterSpec c = sized_cluster(load_cluster(o.cluster), o.nodes, o.world_size);
  TrainingShape s;
  s.dp_replicate = o.dp_replicate;
  s.tp = o.tp;
  s.cp = o.cp;
  s.dp_shard = o.dp_shard ? *o.dp_shard : std::max(1, c.world_size() / (o.tp * o.cp * o.dp_replicate));
  s.sequence_parallel = !o.no_sequence_parallel;
  s.mode = o.mode;
  if (s.mode == ShardingMode::zero3 && s.dp_replicate > 1) s.mode = ShardingMode::hsdp;
  s.micro_batch = o.micro_batch;
  s.seq = o.seq > 0 ? o.seq : std::min<std::int64_t>(8192, m.max_seq);
  s.grad_accum = o.grad_accum;
  s.recompute = o.recompute;
  s.precision.param = o.param_dtype;
  s.precision.reduce = o.reduce_dtype;
  s.blocks_per_unit = o.blocks_per_unit;
  s.prefetch = o.prefetch;
  s.lora = lora_settings(o.lora, m);
  s.loss_scale = o.param_dtype == DType::fp16;  // fp16 trains with loss scaling (plan --fp16's default)
  if (o.fp8_all_gather && !o.fp8) throw ConfigError("command line: --fp8-all-gather: needs --fp8 SCALING");
  if (o.fp8) {
    if (o.param_dtype != DType::bf16) throw ConfigError("command line: --fp8: fp8 recipes run around bf16 (--param-dtype bf16)");
    if (!c.gpu.peak_flops_per_s.count(DType::fp8))
      throw ConfigError(fmt::format("command line: --fp8: GPU \"{}\" has no fp8 peak", c.gpu.name));
    if (o.fp8_all_gather && *o.fp8 == Fp8Scaling::rowwise)
      throw ConfigError("command line: --fp8-all-gather: needs one scale per weight (tensorwise, delayed or current)");
    s.fp8 = Fp8Settings{*o.fp8, o.fp8_all_gather};
  }
  const Estimate e = estimate(m, c, s);
  emit_main_output(o.out, o.format == OutputFormat::json ? estimate_json(e, m, c, s).dump(2) + "\n"
                                                          : estimate_text(e, m, c, s));
}

void add_estimate_options(CLI::App* sub, EstimateOptions& o) {
  sub->add_option("--nodes", o.nodes, "Number of nodes")->check(kPositive);
  sub->add_option("--world-size", o.world_size, "Number of GPUs (ranks)")->check(kPositive);
  sub->add_option("--dp-shard", o.dp_shard, "FSDP shard degree (default: what the others leave)")->check(kPositive);
  sub->add_option("--dp-replicate", o.dp_replicate, "Replica degree (HSDP)")->check(kPositive);
  sub->add_option("--tp", o.tp, "Tensor-parallel degree")->check(kPositive);
  sub->add_option("--cp", o.cp, "Context-parallel degree")->check(kPositive);
  sub->add_flag("--no-sequence-parallel", o.no_sequence_parallel, "Turn sequence parallelism off with TP");
  add_enum_option(sub, "--sharding", o.mode, kShardingModes,
                  "As in plan files: fsdp_full_shard (default), fsdp_shard_grad_op, hsdp, ddp, zero1 or "
                  "distributed_optimizer (zero2, zero3 and fsdp still accepted)");
  sub->add_option("--micro-batch", o.micro_batch, "Sequences per micro-batch per data-parallel rank")->check(kPositive);
  sub->add_option("--seq", o.seq, "Sequence length (default min(8192, max_seq))")->check(kPositive);
  sub->add_option("--grad-accum", o.grad_accum, "Micro-batches per optimizer step")->check(kPositive);
  add_enum_option(sub, "--recompute", o.recompute, kRecomputeModes, "As in plan files: none, selective, selective_op or full");
  add_enum_option(sub, "--param-dtype", o.param_dtype, kDTypes,
                  "Parameter dtype in compute (fp16: with loss scaling, whose unscale pass is counted)");
  add_enum_option(sub, "--reduce-dtype", o.reduce_dtype, kDTypes, "Gradient reduction dtype");
  sub->add_option("--blocks-per-unit", o.blocks_per_unit, "Transformer blocks per FSDP unit")->check(kPositive);
  sub->add_option("--prefetch", o.prefetch, "Units all-gathered ahead of use")->check(kNonNegative);
  add_enum_option(sub, "--format", o.format, kOutputFormats, "text or json");
  add_main_output_option(sub, o.out);
  add_lora_options(sub, o.lora);
  add_enum_option(sub, "--fp8", o.fp8, kFp8Scalings,
                  "fp8 linear GEMMs with this scaling: tensorwise or rowwise (torchao), delayed or current "
                  "(Transformer Engine)");
  sub->add_flag("--fp8-all-gather", o.fp8_all_gather, "FSDP all-gathers the linear weights in fp8");
}

}  // namespace

void setup_estimate(CLI::App& app) {
  auto o = std::make_shared<EstimateOptions>();
  CLI::App* sub = app.add_subcommand("estimate", "Analytic per-GPU memory and a step-time lower bound");
  sub->add_option("--model", o->model, "Model name under configs/models or a JSON file (ours or Hugging Face config.json)")->required();
  sub->add_option("--cluster", o->cluster, "Cluster name under configs/clusters or a JSON file")->required();
  add_estimate_options(sub, *o);
  sub->callback([o] { run_estimate(*o); });
}

}  // namespace fsdpx
