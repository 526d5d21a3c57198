// tools/cmd_run.cpp — `fsdpx run --plan P [--backend cpu|cuda] [--steps K] [--seed S] [--data FILE]
// [--data-dtype uint16|uint32] [--checkpoint-dir D [--checkpoint-every K]] [--resume] [--profile out.json]
// [--trace out.json [--trace-ranks 0,3] [--trace-steps K]]
// [--init-weights|--save-init-weights|--save-weights W.safetensors] [--save-init-adapters A.safetensors]
// [--dump-batches B.safetensors]
// [--single-process|--processes] [--threads N] [--format text|json]`: parses the flags, checks their combinations and
// prints; the executor does the run (executor/session/cpu_placement.h places CPU ranks,
// executor/session/cuda_module_loader.h loads the CUDA backend module and places its ranks,
// executor/session/training_session.h trains). --steps is the step to stop at (default: the plan's
// optimizer.total_steps), so a resumed run with the same --steps ends where the uninterrupted one does.
// Leaves out full-weight files of multi-process runs (refused with a message; checkpoints work there).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/cpu/simd_level.h"
#include "executor/session/checkpoint_plan.h"
#include "executor/session/cpu_placement.h"
#include "executor/session/cuda_module_loader.h"
#include "executor/session/training_session.h"
#include "tools/cli_names.h"
#include "tools/cmd_run.h"
#include "tools/exit_with.h"
#include "tools/run_report.h"
#include "tools/run_trace.h"

namespace fsdpx {

namespace {

// --comm-timeout: from 0.1 s (tests) to a day.
constexpr double kMinCommTimeoutS = 0.1;
constexpr double kMaxCommTimeoutS = 86400.0;

void check_options(const RunOptions& o) {
  const SessionOptions& s = o.session;
  if ((s.resume || s.checkpoint_every > 0) && s.checkpoint_dir.empty())
    throw ConfigError(fmt::format("{} needs --checkpoint-dir", s.resume ? "--resume" : "--checkpoint-every"));
  if (s.resume && !s.init_weights.empty())
    throw ConfigError("--init-weights starts a run from given weights; it cannot be combined with --resume");
  if (!(o.comm_timeout_s >= kMinCommTimeoutS && o.comm_timeout_s <= kMaxCommTimeoutS))
    throw ConfigError(fmt::format("command line: --comm-timeout: expected seconds from {:g} to {:g}, got {:g}",
                                  kMinCommTimeoutS, kMaxCommTimeoutS, o.comm_timeout_s));
  // Said once, before any rank starts (each would say it again): a directory or device is no input file.
  if (!s.data.empty()) check_regular_input(s.data, "data file (--data)");
  if (!s.init_weights.empty()) check_regular_input(s.init_weights, "weights file (--init-weights)");
}

// One process per rank: no process holds every shard, so the full-weight files read or written before the
// first step are refused (checkpoints are saved and loaded by every process, executor/checkpoint/checkpoint.h;
// --save-weights gathers the shards from the processes, executor/session/process_weights.h).
void check_whole_state_options(const SessionOptions& o) {
  const char* needs = !o.init_weights.empty()        ? "--init-weights"
                      : !o.save_init_weights.empty() ? "--save-init-weights"
                      : !o.save_init_adapters.empty() ? "--save-init-adapters"
                                                     : nullptr;
  if (needs)
    throw ConfigError(fmt::format("{} needs every shard in one process: not supported with one process per rank yet "
                                  "(--backend cpu: run the ranks as threads, without --processes; --backend cuda: "
                                  "--single-process on one GPU)", needs));
}

// The ranks of --backend cpu or cuda.
RankPlacement place_ranks(const RunOptions& o, const Plan& plan, const std::string& fingerprint) {
  if (o.backend == ExecutorDevice::cpu) return place_cpu_ranks(plan, fingerprint, o.processes, o.comm_timeout_s);
  if (o.processes) throw ConfigError("--processes is for --backend cpu (--backend cuda runs one process per GPU)");
  // The CUDA backend is a module loaded only now: no other command maps a CUDA library.
  return place_cuda_ranks_from_module(plan.parallelism.world_size(), fingerprint, o.single_process);
}

// Where the ranks run; says so on stderr, and exits when this process only launched them.
RankPlacement place(const RunOptions& o, const Plan& plan, const std::string& fingerprint) {
  const RankPlacement p = place_ranks(o, plan, fingerprint);
  if (!p.launcher_message.empty()) std::fprintf(stderr, "fsdpx: %s\n", p.launcher_message.c_str());
  if (p.launcher_exit) throw ExitWith{*p.launcher_exit};
  if (p.prints && !p.description.empty())
    std::fprintf(stderr, "fsdpx: %s: %s\n", executor_device_name(p.device), p.description.c_str());
  return p;
}

void write_json_file(const std::string& path, const nlohmann::json& j) { write_output_file(path, j.dump(2) + "\n"); }

// About 10 progress lines per run: the first step, every tenth of the run, the last step. On a terminal the
// steps between them rewrite one line in place (carriage return, erase to the end of the line).
bool kept_progress_line(const StepMetrics& m, const RunRecord& r) {
  const std::int64_t every = std::max<std::int64_t>(1, (r.target_steps - r.start_step) / 10);
  return m.step == r.target_steps || (m.step - r.start_step) % every == 0 || m.step == r.start_step + 1;
}
void print_progress(const StepMetrics& m, const RunRecord& r, double elapsed_s, bool tty) {
  const bool kept = kept_progress_line(m, r);
  if (!kept && !tty) return;
  const char* end = !tty ? "\n" : kept ? "\x1b[K\n" : "\x1b[K";  // erase what a longer line left
  std::printf("%s%s%s", tty ? "\r" : "", progress_line(m, r, elapsed_s).c_str(), end);
  std::fflush(stdout);
}

}  // namespace

void run_run(RunOptions o) {
  check_options(o);
  SessionOptions& so = o.session;
  so.plan_file = resolve_config("plans", o.plan);
  Plan plan = load_plan(so.plan_file);
  if (o.seed) plan.training.seed = *o.seed;
  RuntimeProgram program = make_session_program(plan, so.plan_file, o.backend);  // the run's one lowering
  if (o.processes) check_whole_state_options(so);  // before the ranks start, so it is said once
  check_session_outputs(so);  // an unusable output or --checkpoint-dir is said now, not after the steps
  if (!o.profile.empty()) check_output_writable(o.profile);
  check_run_trace_options(o.trace, plan, o.processes || (o.backend == ExecutorDevice::cuda && !o.single_process));
  const RankPlacement placement = place(o, plan, plan_fingerprint(plan));
  if (!placement.whole_state) check_whole_state_options(so);
  if (!placement.prints) o.format = OutputFormat::json, so.dump_batches.clear();  // rank 0 reports and records
  so.profile = !o.profile.empty();
  so.trace = !o.trace.file.empty(), so.trace_steps = o.trace.steps;
  if (placement.prints)
    so.on_rejected_checkpoint = [](const std::string& why) {
      std::fprintf(stderr, "fsdpx: warning: %s; trying an older checkpoint\n", why.c_str());
    };
  TrainingSession session(plan, std::move(program), so, placement);
  if (placement.prints && o.backend == ExecutorDevice::cpu) {
    const cpu::ThreadBudget& t = session.trainer().thread_budget();
    std::fprintf(stderr, "fsdpx: cpu: %s; kernels built for SIMD %s\n", t.describe().c_str(),
                 cpu::kernel_simd_level().c_str());
    if (t.oversubscribed()) std::fprintf(stderr, "fsdpx: warning: more kernel threads than cores (%s)\n", t.source.c_str());
  }
  const bool text = o.format == OutputFormat::text, tty = ::isatty(STDOUT_FILENO) != 0;
  if (text) std::printf("%s", run_header_text(plan, session.record()).c_str());
  session.train([&](const StepMetrics& m, double elapsed_s) {
    if (text) print_progress(m, session.record(), elapsed_s, tty);
  });
  session.finish();
  const RunRecord& r = session.record();
  if (!placement.prints) return;
  if (!o.profile.empty()) write_json_file(o.profile, profile_json(plan, session.trainer().profile(), r));
  if (so.trace) write_run_trace(o.trace, session.trainer(), r.backend, so.plan_file);
  if (o.format == OutputFormat::json)
    std::printf("%s\n", run_json(r).dump(2).c_str());
  else
    std::printf("%s", run_summary_text(plan, r).c_str());
}

}  // namespace fsdpx
