// tools/cli_setup_runs.cpp — the command-line options of the other commands: demo, explain-memory,
// report and those that run or read runs (run, calibrate, compare, sample, export-hf). Each setup_*
// registers its options into the command's options struct (tools/cmd_*.h) and a callback that runs it, as
// tools/cli_setup_plans.cpp does for the five commands the Python module runs. Leaves out what they do.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/input_ranges.h"
#include "tools/cli_names.h"
#include "tools/cli_numbers.h"
#include "tools/cli_options.h"
#include "tools/cmd_calibrate.h"
#include "tools/cmd_compare.h"
#include "tools/cmd_demo.h"
#include "tools/cmd_explain_memory.h"
#include "tools/cmd_export_hf.h"
#include "tools/cmd_report.h"
#include "tools/cmd_run.h"
#include "tools/cmd_sample.h"
#include "tools/commands.h"
#include "tools/main_output.h"

namespace fsdpx {

namespace {

const std::map<std::string, ExecutorDevice> kBackends{{"cpu", ExecutorDevice::cpu}, {"cuda", ExecutorDevice::cuda}};
const std::map<std::string, std::optional<TokenDType>> kTokenDTypes{{"uint16", TokenDType::u16},
                                                                    {"uint32", TokenDType::u32}};

void add_run_trace_options(CLI::App* run, RunTraceOptions& o) {
  run->add_option("--trace", o.file,
                  "Write the measured steps as a Chrome/Perfetto trace (the op names of fsdpx simulate --trace; "
                  "for fsdpx compare)");
  run->add_option("--trace-ranks", o.ranks, "Ranks to trace, e.g. 0,3 (default: every rank)")->delimiter(',');
  run->add_option("--trace-steps", o.steps, "Trace the last K steps (default: every step)")->check(CLI::Range(1, 1 << 30));
}

}  // namespace

void setup_demo(CLI::App& app) {
  auto format = std::make_shared<OutputFormat>(OutputFormat::text);
  CLI::App* sub = app.add_subcommand("demo", "The main job on the embedded default: plan, estimate and simulate "
                                             "Llama-3.1-8B on one 8xH100 node");
  auto out = std::make_shared<std::string>();
  add_enum_option(sub, "--format", *format, kOutputFormats, "text or json");
  add_main_output_option(sub, *out);
  sub->callback([format, out] { run_demo(*format, *out); });
}

void setup_explain_memory(CLI::App& app) {
  auto o = std::make_shared<ExplainMemoryOptions>();
  CLI::App* sub = app.add_subcommand("explain-memory", "Where a plan's memory peak is and which changes would fit");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)")->required();
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  add_main_output_option(sub, o->out);
  sub->callback([o] { run_explain_memory(*o); });
}

void setup_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "What-if sweeps over nodes, inter-node bandwidth and sequence length");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans): re-simulated per point");
  sub->add_option("--model", o->model, "Model (re-planned per point; needs --cluster, --seq, --global-batch)");
  sub->add_option("--cluster", o->cluster, "Cluster name under configs/clusters or a JSON file");
  sub->add_option("--nodes", o->nodes, "Number of nodes of the base point")->check(kPositive);
  sub->add_option("--world-size", o->world_size, "Number of GPUs of the base point")->check(kPositive);
  sub->add_option("--seq", o->seq, "Sequence length of the base point")->check(kPositive);
  sub->add_option("--global-batch", o->global_batch, "Sequences per step at the base point")->check(kPositive);
  sub->add_option("--memory-limit", o->memory_limit_gib,
                  "Memory per GPU in GiB: the capacity rows are marked against (and plans must fit when re-planning)")
      ->check(kPositive);
  sub->add_option("--target", o->target, "What runs the re-planned plans: fsdpx (default) or torchtitan@<release>");
  sub->add_option("--vary", o->vary,
                  "NAME=V1,V2,... with NAME nodes, inter_node_gbit (per GPU), seq or ep (MoE models); repeat for a grid");
  sub->add_option("--scaling", o->scaling,
                  "What a change of node count keeps: weak (the per-GPU batch, default), strong (the global batch) or both")
      ->check(CLI::IsMember({"weak", "strong", "both"}));
  sub->add_option("--train-tokens", o->train_tokens, "Also show the time to train this many tokens (2e12, 15T, 300B)");
  sub->add_option("-o,--html", o->html, "Write the self-contained HTML report (SVG charts) to this file");
  sub->add_option("--csv", o->csv, "Write one CSV row per point to this file");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json (stdout)");
  sub->callback([o] { run_report(*o); });
}

void setup_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Train a plan with the executor (CPU backend: ranks are threads)");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)")->required();
  add_enum_option(sub, "--backend", o->backend, kBackends, "cpu (reference) or cuda");
  sub->add_option("--steps", o->session.steps, "Train until this step (default: the plan's optimizer.total_steps)")
      ->check(kPositive)
      ->check(cli_range(input_range::kSteps));
  sub->add_option_function<std::uint64_t>("--seed", [o](std::uint64_t s) { o->seed = s; },
                                          "Seed for initialisation and data order (default: the plan's)");
  sub->add_option("--data", o->session.data, "Plain text (byte tokens) or FSDPXTOK token file (default: data/kjv-genesis.txt)");
  add_enum_option(sub, "--data-dtype", o->session.data_dtype, kTokenDTypes,
                  "Read --data as a raw little-endian token array of this type");
  sub->add_option("--checkpoint-dir", o->session.checkpoint_dir, "Save checkpoints here (and at the last step)");
  sub->add_option("--checkpoint-every", o->session.checkpoint_every, "Save every K steps")
      ->check(kPositive)
      ->check(cli_range(input_range::kSteps));
  sub->add_flag("--resume", o->session.resume, "Continue from the newest good checkpoint in --checkpoint-dir");
  sub->add_option("--profile", o->profile, "Write per-op and per-kernel wall times (for fsdpx calibrate)");
  add_run_trace_options(sub, o->trace);
  sub->add_option("--init-weights", o->session.init_weights, "Start from these full fp32 weights (safetensors), not the seed");
  sub->add_option("--save-init-weights", o->session.save_init_weights, "Write the full fp32 weights before the first step");
  sub->add_option("--save-init-adapters", o->session.save_init_adapters,
                  "LoRA: write the initial adapters (block.<i>.<target>.lora_A/B, fp32 safetensors)");
  sub->add_option("--save-weights", o->session.save_weights, "Write the full fp32 weights after the last step (safetensors)");
  sub->add_option("--dump-batches", o->session.dump_batches, "Write the batches used: I32 tokens [steps, global_batch, seq+1]");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  sub->add_flag("--single-process", o->single_process,
                 "--backend cuda: run every rank as a thread on GPU 0 (in-process communicator) instead of one "
                 "process per GPU");
  sub->add_option("--threads", o->session.threads,
                  "--backend cpu: kernel threads per rank (default: OMP_NUM_THREADS, else the cores this process may "
                  "use shared by its ranks and the processes on this host)")
      ->check(CLI::Range(1, 4096));
  sub->add_flag("--processes", o->processes,
                 "--backend cpu: run one process per rank on this node (TCP communicator) instead of threads");
  sub->add_option("--comm-timeout", o->comm_timeout_s,
                  "Seconds a collective may wait, and a rank may send nothing (not even a heartbeat), before the run "
                  "is aborted naming it (one process per rank; default 100, torchtitan's)");
  sub->callback([o] { run_run(*o); });
}

void setup_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand("calibrate", "Turn a run profile into a cluster spec with measured efficiencies");
  sub->add_option("--profile", o->profile, "Profile written by fsdpx run --profile");
  sub->add_option("--trace", o->trace, "PyTorch profiler traces of a run of --plan (a file or one per rank in a directory)");
  sub->add_option("--plan", o->plan, "With --trace: the plan the traced run ran");
  sub->add_option("-o,--output", o->output, "Write the calibrated cluster JSON here")->required();
  sub->add_option("--plan-out", o->plan_out, "Also write the profiled plan with the calibrated cluster");
  sub->add_option("--name", o->name, "Name of the calibrated cluster (default: <cluster>-calibrated)");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  sub->callback([o] { run_calibrate(*o); });
}

void setup_compare(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare", "Lay a plan's simulated step beside a measured run of it, op by op; or summarise profiler traces");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)");
  sub->add_option("--profile", o->profile, "The run's trace (fsdpx run --trace) or profile (fsdpx run --profile)");
  sub->add_option("--trace", o->trace,
                  "PyTorch profiler traces (.json/.json.gz, a file or a directory with one per rank)");
  sub->add_option("--predicted-trace", o->predicted_trace,
                  "With --plan --trace: write the simulated step as PyTorch profiler traces into this directory");
  sub->add_option("-o,--output", o->html, "Write an HTML view to this file");
  sub->add_option("--top", o->top, "Op rows in the text output, largest misses first (0: all; default 20)")
      ->check(CLI::Range(0, 1 << 30));
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  sub->callback([o] { run_compare(*o); });
}

void setup_sample(CLI::App& app) {
  auto o = std::make_shared<SampleCliOptions>();
  CLI::App* sub = app.add_subcommand("sample", "Generate text from a CPU-trained checkpoint (byte tokens)");
  sub->add_option("--checkpoint", o->checkpoint, "Checkpoint root of fsdpx run --checkpoint-dir, or one step-NNNNNN")
      ->required();
  sub->add_option("--prompt", o->prompt, "Text to continue (default \"In the beginning\")");
  sub->add_option("--tokens", o->sample.tokens, "Bytes to generate (default 200)")->check(kPositive);
  sub->add_option("--temperature", o->sample.temperature, "0: greedy; else softmax(logits / T) (default 0.8)")
      ->check(kNonNegative);
  sub->add_option("--seed", o->sample.seed, "Seed of the sampling generator (default 0)");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json (tokens and text)");
  add_main_output_option(sub, o->out);
  sub->callback([o] { run_sample(*o); });
}

void setup_export_hf(CLI::App& app) {
  auto o = std::make_shared<ExportHfOptions>();
  CLI::App* sub = app.add_subcommand("export-hf", "Write a checkpoint's weights as a Hugging Face model (safetensors)");
  sub->add_option("--checkpoint", o->checkpoint, "Checkpoint root of fsdpx run --checkpoint-dir, or one step-NNNNNN")
      ->required();
  sub->add_option("-o,--output", o->output, "Output directory (config.json, model.safetensors)")->required();
  sub->callback([o] { run_export_hf(*o); });
}

}  // namespace fsdpx
