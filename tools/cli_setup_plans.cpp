// tools/cli_setup_plans.cpp — the command-line options of plan, estimate, simulate, validate and export
// (the commands the Python module also runs, python/module.cpp): each setup_* registers its options into
// the command's options struct (tools/cmd_*.h) and a callback that runs it. With tools/cli_setup_runs.cpp
// the only command units that parse CLI11, so the commands' own units compile without it. Leaves out what
// the commands do.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/input_ranges.h"
#include "tools/cli_names.h"
#include "tools/cli_numbers.h"
#include "tools/cli_options.h"
#include "tools/cmd_estimate.h"
#include "tools/cmd_export.h"
#include "tools/cmd_plan.h"
#include "tools/cmd_simulate.h"
#include "tools/cmd_validate.h"
#include "tools/commands.h"
#include "tools/main_output.h"

namespace fsdpx {

namespace {

const std::map<std::string, DataParallel> kPlanShardings{{"fsdp_full_shard", DataParallel::fsdp_full_shard},
                                                         {"hsdp", DataParallel::hsdp}};

const std::map<std::string, PipelineSchedule> kSchedules{{"gpipe", PipelineSchedule::gpipe},
                                                         {"1f1b", PipelineSchedule::one_f_one_b},
                                                         {"interleaved_1f1b", PipelineSchedule::interleaved_1f1b},
                                                         {"zero_bubble", PipelineSchedule::zero_bubble}};

const std::map<std::string, Objective> kObjectives{{"throughput", Objective::throughput}, {"memory", Objective::memory}};

void add_lora_options(CLI::App* sub, LoraOptions& o) {
  sub->add_option("--lora-rank", o.rank, "LoRA rank r: fine-tune low-rank adapters on a frozen base")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{65536}));
  sub->add_option("--lora-alpha", o.alpha, "LoRA alpha (output scale alpha / r; default 2 r)")
      ->check(CLI::Range(1e-6, 1e6));
  sub->add_option("--lora-targets", o.targets, "Adapted projections, comma-separated: q,k,v,o,gate,up,down");
  sub->add_option("--lora-dropout", o.dropout, "Adapter input dropout (simulated; the executors run 0)")
      ->check(CLI::Range(0.0, 0.999));
}

const std::map<std::string, ExportFormat> kExportFormats{{"torchtitan", ExportFormat::torchtitan}};

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

void setup_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand("simulate", "Simulate one training step of a plan");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)")->required();
  sub->add_option("--trace", o->trace, "Write a Chrome/Perfetto trace of the step to this file");
  sub->add_flag("--no-overlap", o->no_overlap, "Run every op of a rank one after another (analytic check)");
  sub->add_flag("--full", o->full,
                "Simulate every micro-batch (default: a probe of a few, the repeating steady state extrapolated)");
  sub->add_flag("--program", o->program,
                "Print the step program of one pipeline rank, op by op (stream, kind, unit, micro-batch, group, bytes, "
                "effects, dependencies, simulated time)");
  sub->add_option_function<int>("--role", [o](int r) { o->role = r, o->role_given = true; },
                                "With --program: the pipeline rank to print (default 0)");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  add_main_output_option(sub, o->out);
  sub->callback([o] { run_simulate(*o); });
}

void setup_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand("validate", "Simulate published training runs and compare with the measurements");
  sub->add_option("file", o->positional, "Case file (fsdpx-published-runs/1)");
  sub->add_option("--cases", o->cases, "Case file (fsdpx-published-runs/1)");
  sub->add_option("--write-plans", o->write_plans, "Write the plan of every simulated case into this existing folder");
  sub->add_option("--write-interval", o->write_interval,
                  "Write the 80% band of this file's errors as a prediction-interval file "
                  "(configs/validation/prediction_interval.json is made from the held-back ground-truth runs)");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  add_main_output_option(sub, o->out);
  sub->callback([o] { run_validate(*o); });
}

void setup_plan(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand("plan", "Search for the best plan: parallelism, wrapping, recompute, prefetch");
  sub->add_option("--model", o->model, "Model name under configs/models or a JSON file")->required();
  sub->add_option("--cluster", o->cluster, "Cluster name under configs/clusters or a JSON file")->required();
  sub->add_option("--nodes", o->nodes, "Number of nodes")->check(kPositive);
  sub->add_option("--world-size", o->world_size, "Number of GPUs (ranks)")->check(kPositive);
  sub->add_option("--seq", o->seq, "Sequence length in tokens")->required()->check(kPositive);
  sub->add_option("--global-batch", o->global_batch, "Sequences per optimizer step")->required()->check(kPositive);
  sub->add_option("--memory-limit", o->memory_limit_gib, "Memory per GPU in GiB (default: the GPU's HBM)")
      ->check(kPositive);
  sub->add_option("--memory-margin", o->margin,
                  "Memory kept free per GPU: GiB, or a percentage of the capacity (default 10%: allocator "
                  "fragmentation, NCCL growth, model error; docs/planner.md)");
  sub->add_option("--throughput-tolerance", o->tolerance_pct,
                  "Plans within this percentage of the fastest count as equally fast; the one with most headroom "
                  "wins (default 0.5)");
  sub->add_flag("--allow-bf16-reduce", o->allow_bf16_reduce, "Allow gradient reduction in bf16 (default: fp32)");
  sub->add_flag("--fp16", o->fp16,
                "Compute in fp16 with dynamic loss scaling (the plan's default loss_scale section; fsdpx's CPU "
                "backend runs it)");
  add_enum_option(sub, "--fp8", o->fp8, kFp8Scalings,
                  "Run the blocks' linear GEMMs in fp8 with this scaling: tensorwise or rowwise (torchao), delayed "
                  "or current (Transformer Engine)");
  sub->add_flag("--fp8-all-gather", o->fp8_all_gather, "FSDP all-gathers the linear weights in fp8 (--fp8 tensorwise)");
  sub->add_option("--target", o->target, "What will run the plan: fsdpx (default) or torchtitan@0.2.0|0.2.1|0.2.2");
  add_enum_option(sub, "--objective", o->objective, kObjectives, "throughput or memory");
  add_enum_option(sub, "--framework", o->framework, kFrameworks,
                  "training stack whose costs the plans assume: fsdpx, torchtitan, fms-fsdp, llm-foundry, megatron "
                  "(default: the target's)");
  sub->add_flag("--compiled", o->compiled,
                "the stack runs its blocks under torch.compile (torchtitan, fms-fsdp, llm-foundry)");
  sub->add_option("--top", o->top, "Alternatives to show")->check(kNonNegative);
  sub->add_flag("--pareto", o->pareto, "Also list the Pareto frontier (throughput vs peak memory; JSON has it)");
  sub->add_option("--pp", o->fixed.pp, "Fix the pipeline-parallel degree (1: no pipeline)")->check(kPositive);
  add_enum_option(sub, "--pp-schedule", o->pp_schedule, kSchedules,
                  "Fix the pipeline schedule: gpipe, 1f1b, interleaved_1f1b or zero_bubble");
  sub->add_option("--vpp", o->fixed.vpp, "Fix the model chunks per pipeline rank (interleaved 1F1B)")->check(kPositive);
  sub->add_option("--tp", o->fixed.tp, "Fix the tensor-parallel degree")->check(kPositive);
  sub->add_option("--cp", o->fixed.cp, "Fix the context-parallel degree")->check(kPositive);
  sub->add_option("--dp-shard", o->fixed.dp_shard, "Fix the FSDP shard degree")->check(kPositive);
  sub->add_option("--dp-replicate", o->fixed.dp_replicate, "Fix the HSDP replica degree")->check(kPositive);
  add_enum_option(sub, "--sharding", o->sharding, kPlanShardings,
                  "Fix the data-parallel sharding: fsdp_full_shard or hsdp (replicas across nodes unless --dp-replicate)");
  add_enum_option(sub, "--recompute", o->recompute, kPlanRecomputeModes,
                  "Fix the recompute of every block: none, selective, selective_op or full");
  add_lora_options(sub, o->lora);
  sub->add_option("-o,--output", o->out, "Write the chosen plan (fsdpx-plan/1 JSON) to this file");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  sub->callback([o] { run_plan(*o); });
}

void setup_export(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* sub = app.add_subcommand("export", "Write a plan as another framework's config (torchtitan TOML)");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)")->required();
  sub->add_option("--target", o->target, "torchtitan@0.2.0, torchtitan@0.2.1 or torchtitan@0.2.2 (default)");
  add_enum_option(sub, "--format", o->format, kExportFormats, "torchtitan (the only format; --target names the release)");
  sub->add_option("-o,--output", o->out, "Write to this file instead of stdout");
  sub->callback([o] { run_export(*o); });
}

}  // namespace fsdpx
