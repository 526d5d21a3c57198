// tools/cmd_run.cpp — `fsdpx run --plan P [--backend cpu|cuda] [--steps K] [--seed S] [--data FILE]
// [--data-dtype uint16|uint32] [--checkpoint-dir D [--checkpoint-every K]] [--resume] [--profile out.json]
// [--init-weights|--save-init-weights|--save-weights W.safetensors] [--dump-batches B.safetensors]
// [--single-process|--processes] [--format text|json]`: trains a plan with the executor runtime: the CPU
// reference backend (tools/run_cpu_processes.h: ranks are threads of this process, or one process per
// rank with --processes or under a launcher) or the CUDA backend (tools/run_cuda.h: threads
// on one GPU, or one process per GPU launched here or by torchrun/srun/mpirun). --steps is the step to
// stop at (default: the plan's optimizer.total_steps), so a resumed run with the same --steps ends where
// the uninterrupted one does. Checkpoints of multi-process runs are written and read by every process
// (checkpoint.h); full-weight files need every shard in one process and are refused there.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/reshard.h"
#include "executor/data/text_dataset.h"
#include "executor/runtime/runtime_program.h"
#include "tools/cli_options.h"
#ifdef FSDPX_HAVE_CUDA
#include "tools/run_cuda.h"
#endif
#include "tools/commands.h"
#include "tools/run_batches.h"
#include "tools/run_cpu_processes.h"
#include "tools/run_report.h"
#include "tools/run_weights.h"

namespace fsdpx {

namespace {

enum class Backend { cpu, cuda };
const std::map<std::string, Backend> kBackends{{"cpu", Backend::cpu}, {"cuda", Backend::cuda}};
const std::map<std::string, std::optional<TokenDType>> kTokenDTypes{{"uint16", TokenDType::u16},
                                                                    {"uint32", TokenDType::u32}};

struct RunOptions {
  std::string plan;
  Backend backend = Backend::cpu;
  std::int64_t steps = 0;  // 0: the plan's optimizer.total_steps
  std::optional<std::uint64_t> seed;
  std::string data;
  std::optional<TokenDType> data_dtype;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;
  bool resume = false;
  std::string profile;
  std::string init_weights, save_init_weights, save_weights, dump_batches;  // safetensors files
  bool single_process = false;  // --backend cuda: every rank as a thread on GPU 0
  bool processes = false;       // --backend cpu: one process per rank on this node
  OutputFormat format = OutputFormat::text;
};

// Where --backend cuda runs the ranks (tools/run_cuda.h), or why it cannot run here.
struct BackendSetup {
  RankBackendFactory backends;  // empty: the CPU reference backend
  bool prints = true;           // this process reports (rank 0 of a multi-process job, or every rank's process)
  bool whole_state = true;      // every shard owner runs in this process (weights, params hash)
  std::string job_token;        // names a multi-process job's checkpoint staging directory (checkpoint.h)
  std::string description = "cpu";  // RunRecord::backend
};

BackendSetup backend_setup(const RunOptions& o, const Plan& plan, const std::string& fingerprint) {
  BackendSetup b;
  if (o.backend == Backend::cpu) {
    CpuRunSetup s = setup_cpu_run(plan, fingerprint, o.processes);
    if (s.launcher_exit) throw ExitWith{*s.launcher_exit};
    b.backends = std::move(s.backends);
    b.prints = s.prints;
    b.whole_state = s.whole_state;
    b.job_token = s.job_token;
    if (b.prints && !s.description.empty()) std::fprintf(stderr, "fsdpx: cpu: %s\n", s.description.c_str());
    return b;
  }
  if (o.processes) throw ConfigError("--processes is for --backend cpu (--backend cuda runs one process per GPU)");
#ifdef FSDPX_HAVE_CUDA
  CudaRunSetup s = setup_cuda_run(plan, fingerprint, o.single_process);
  if (s.launcher_exit) throw ExitWith{*s.launcher_exit};
  b.backends = std::move(s.backends);
  b.prints = s.prints;
  b.whole_state = s.whole_state;
  b.job_token = s.job_token;
  b.description = "cuda";
  if (b.prints) std::fprintf(stderr, "fsdpx: cuda: %s\n", s.description.c_str());
  return b;
#else
  (void)plan, (void)fingerprint;
  throw ConfigError("--backend cuda: no CUDA device was found: this fsdpx was built without CUDA (nvcc not found)");
#endif
}

void check_options(const RunOptions& o) {
  if ((o.resume || o.checkpoint_every > 0) && o.checkpoint_dir.empty())
    throw ConfigError(fmt::format("{} needs --checkpoint-dir", o.resume ? "--resume" : "--checkpoint-every"));
  if (o.resume && !o.init_weights.empty())
    throw ConfigError("--init-weights starts a run from given weights; it cannot be combined with --resume");
}

// How checkpoints reach the other processes of a multi-process job: sums through the trainer's ranks.
CheckpointGroup checkpoint_group(Trainer& trainer, const BackendSetup& b) {
  CheckpointGroup g;
  g.leader = trainer.hosts_rank0();
  g.job_token = b.job_token;
  if (!b.whole_state) g.sum = [&trainer](const std::vector<std::uint64_t>& w) { return trainer.sum_over_processes(w); };
  return g;
}

// Loads the newest checkpoint that every process verifies into `trainer`, resharded to its layout; the
// reporting process names the rejected ones.
std::string resume_from(Trainer& trainer, const std::string& root, const std::string& fingerprint,
                        const CheckpointGroup& group, bool prints) {
  std::vector<std::string> rejected;
  auto loaded = load_latest_checkpoint(root, fingerprint, &rejected, group);
  const auto& msgs = loaded ? loaded->rejected : rejected;
  for (const auto& m : msgs)
    if (prints) std::fprintf(stderr, "fsdpx: warning: %s; trying an older checkpoint\n", m.c_str());
  if (!loaded)
    throw ConfigError(fmt::format("--resume: no loadable checkpoint in {} ({})", root,
                                  rejected.empty() ? "no step-NNNNNN directory" : "every one failed verification"));
  trainer.load_state(reshard_state(loaded->state, trainer.load_layout(), "checkpoint " + loaded->dir));
  return loaded->dir;
}

std::string params_hash(const Trainer& trainer) {
  const std::vector<float> p = trainer.gather_full_params();
  return fmt::format("{:016x}", fnv1a64(p.data(), p.size() * sizeof(float)));
}

void write_json_file(const std::string& path, const nlohmann::json& j) { write_output_file(path, j.dump(2) + "\n"); }

// Prints progress on a terminal every step; when piped, about 20 lines per run plus the last step.
bool show_progress(const StepMetrics& m, const RunRecord& r, bool tty) {
  const std::int64_t every = std::max<std::int64_t>(1, (r.target_steps - r.start_step) / 20);
  return tty || m.step == r.target_steps || (m.step - r.start_step) % every == 0 || m.step == r.start_step + 1;
}

void train_loop(Trainer& trainer, const RunOptions& o, const std::string& fingerprint, const CheckpointGroup& group,
                RunRecord& r) {
  const bool text = o.format == OutputFormat::text, tty = ::isatty(STDOUT_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (std::int64_t step = r.start_step; step < r.target_steps; ++step) {
    const StepMetrics m = trainer.step();
    r.steps.push_back(m);
    if (text && show_progress(m, r, tty)) {
      std::printf("%s\n", progress_line(m, r, elapsed_s()).c_str());
      std::fflush(stdout);
    }
    const bool save_now = o.checkpoint_every > 0 && m.step % o.checkpoint_every == 0;
    if (!o.checkpoint_dir.empty() && (save_now || m.step == r.target_steps))
      r.checkpoints.push_back(save_checkpoint(o.checkpoint_dir, trainer.local_state(), fingerprint, group));
  }
  r.elapsed_s = elapsed_s();
}

// The runtime names the JSON path of what it cannot run as "plan: /path: ..."; say which file.
[[noreturn]] void rethrow_naming_file(const ConfigError& e, const std::string& file) {
  const std::string what = e.what();
  if (what.rfind("plan: ", 0) == 0) throw ConfigError(file + ": " + what.substr(6));
  throw e;
}

// Before any process, GPU or rendezvous is set up (a launcher's ranks would all report the same error).
void check_runnable(const Plan& plan, const std::string& file, bool cuda) {
  try {
    (void)make_runtime_program(plan, cuda ? ExecutorDevice::cuda : ExecutorDevice::cpu);
  } catch (const ConfigError& e) {
    rethrow_naming_file(e, file);
  }
}

std::unique_ptr<Trainer> make_trainer(const Plan& plan, const std::string& file, std::shared_ptr<DataSource> data,
                                      const TrainerOptions& options, const RankBackendFactory& backends) {
  try {
    return std::make_unique<Trainer>(plan, std::move(data), options, backends);
  } catch (const ConfigError& e) {
    rethrow_naming_file(e, file);
  }
}

// One process per rank: no process holds every shard, so the full-weight files are refused (checkpoints
// are written and read by every process, checkpoint.h).
void check_whole_state_options(const RunOptions& o) {
  const char* needs = !o.init_weights.empty()        ? "--init-weights"
                      : !o.save_init_weights.empty() ? "--save-init-weights"
                      : !o.save_weights.empty()      ? "--save-weights"
                                                     : nullptr;
  if (needs)
    throw ConfigError(fmt::format("{} needs every shard in one process: not supported with one process per rank yet "
                                  "(--backend cpu: run the ranks as threads, without --processes; --backend cuda: "
                                  "--single-process on one GPU)", needs));
}

// Before any training: an unusable --checkpoint-dir or output path is reported now, not after the steps.
void check_run_outputs(const RunOptions& o) {
  if (!o.checkpoint_dir.empty()) prepare_checkpoint_dir(o.checkpoint_dir);
  for (const std::string* out : {&o.profile, &o.save_weights, &o.save_init_weights, &o.dump_batches})
    if (!out->empty()) check_output_writable(*out);
}

// Everything after the training loop: memory, hashes, weight and batch files, profile, the report.
void finish_run(Trainer& trainer, const RunOptions& o, const BackendSetup& b, BatchRecorder* recorder, RunRecord& r) {
  r.peak_memory = trainer.peak_memory();
  if (b.whole_state) r.params_hash = params_hash(trainer);
  if (!o.save_weights.empty()) save_full_weights(trainer, o.save_weights, r.start_step + std::int64_t(r.steps.size()));
  if (recorder) recorder->write(o.dump_batches, std::int64_t(r.steps.size()));
  if (!o.profile.empty() && b.prints) write_json_file(o.profile, profile_json(trainer.plan(), trainer.profile(), r));
  if (!b.prints) return;
  if (o.format == OutputFormat::json)
    std::printf("%s\n", run_json(r).dump(2).c_str());
  else
    std::printf("%s", run_summary_text(r).c_str());
}

void run_run(RunOptions o) {
  check_options(o);
  const std::string plan_file = resolve_config("plans", o.plan);
  Plan plan = load_plan(plan_file);
  if (o.seed) plan.training.seed = *o.seed;
  const std::string fingerprint = plan_fingerprint(plan);
  check_runnable(plan, plan_file, o.backend == Backend::cuda);
  if (o.processes) check_whole_state_options(o);  // before the ranks start, so it is said once
  check_run_outputs(o);
  const BackendSetup b = backend_setup(o, plan, fingerprint);
  if (!b.whole_state) check_whole_state_options(o);
  if (!b.prints) o.format = OutputFormat::json, o.dump_batches.clear();  // rank 0 reports and records
  std::shared_ptr<DataSource> data = open_dataset({o.data, o.data_dtype, plan.training.seed, plan.model.vocab});
  std::shared_ptr<BatchRecorder> recorder;
  if (!o.dump_batches.empty())
    data = recorder = std::make_shared<BatchRecorder>(data, plan.training.global_batch, plan.training.seq);
  TrainerOptions to;
  to.profile = !o.profile.empty();
  to.cuda = o.backend == Backend::cuda;
  const std::unique_ptr<Trainer> trainer = make_trainer(plan, plan_file, data, to, b.backends);
  const CheckpointGroup group = checkpoint_group(*trainer, b);
  RunRecord r;
  r.backend = b.description;
  r.data = data->describe();
  r.target_steps = o.steps > 0 ? o.steps : plan.optimizer.total_steps;
  if (!o.init_weights.empty()) load_full_weights(*trainer, o.init_weights);
  if (o.resume) {
    r.resumed_from = resume_from(*trainer, o.checkpoint_dir, fingerprint, group, b.prints);
    r.start_step = trainer->local_state().step;
  }
  if (!o.save_init_weights.empty()) save_full_weights(*trainer, o.save_init_weights, r.start_step);
  if (o.format == OutputFormat::text) std::printf("%s", run_header_text(plan, r).c_str());
  train_loop(*trainer, o, fingerprint, group, r);
  finish_run(*trainer, o, b, recorder.get(), r);
}

}  // namespace

void setup_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Train a plan with the executor (CPU backend: ranks are threads)");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)")->required();
  add_enum_option(sub, "--backend", o->backend, kBackends, "cpu (reference) or cuda");
  sub->add_option("--steps", o->steps, "Train until this step (default: the plan's optimizer.total_steps)")
      ->check(kPositive);
  sub->add_option_function<std::uint64_t>("--seed", [o](std::uint64_t s) { o->seed = s; },
                                          "Seed for initialisation and data order (default: the plan's)");
  sub->add_option("--data", o->data, "Plain text (byte tokens) or FSDPXTOK token file (default: data/kjv-genesis.txt)");
  add_enum_option(sub, "--data-dtype", o->data_dtype, kTokenDTypes,
                  "Read --data as a raw little-endian token array of this type");
  sub->add_option("--checkpoint-dir", o->checkpoint_dir, "Save checkpoints here (and at the last step)");
  sub->add_option("--checkpoint-every", o->checkpoint_every, "Save every K steps")->check(kPositive);
  sub->add_flag("--resume", o->resume, "Continue from the newest good checkpoint in --checkpoint-dir");
  sub->add_option("--profile", o->profile, "Write per-op and per-kernel wall times (for fsdpx calibrate)");
  sub->add_option("--init-weights", o->init_weights, "Start from these full fp32 weights (safetensors), not the seed");
  sub->add_option("--save-init-weights", o->save_init_weights, "Write the full fp32 weights before the first step");
  sub->add_option("--save-weights", o->save_weights, "Write the full fp32 weights after the last step (safetensors)");
  sub->add_option("--dump-batches", o->dump_batches, "Write the batches used: I32 tokens [steps, global_batch, seq+1]");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  sub->add_flag("--single-process", o->single_process,
                 "--backend cuda: run every rank as a thread on GPU 0 (in-process communicator) instead of one "
                 "process per GPU");
  sub->add_flag("--processes", o->processes,
                 "--backend cpu: run one process per rank on this node (TCP communicator) instead of threads");
  sub->callback([o] { run_run(*o); });
}

}  // namespace fsdpx
