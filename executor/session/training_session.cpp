// executor/session/training_session.cpp — one training run (see training_session.h).
#include "executor/session/training_session.h"

#include <chrono>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/params_hash.h"
#include "executor/checkpoint/reshard.h"
#include "executor/data/text_dataset.h"
#include "executor/runtime/param_layout.h"
#include "executor/runtime/runtime_program.h"
#include "executor/session/batch_recorder.h"
#include "executor/session/checkpoint_plan.h"
#include "executor/session/full_weights.h"
#include "executor/session/process_weights.h"

namespace fsdpx {

namespace {

// The runtime names the JSON path of what it cannot run as "plan: /path: ..."; say which file.
[[noreturn]] void rethrow_naming_file(const ConfigError& e, const std::string& file) {
  const std::string what = e.what();
  if (what.rfind("plan: ", 0) == 0) throw ConfigError(file + ": " + what.substr(6));
  throw e;
}

// The parameter hash of a run with one process per rank costs a gather of 32 bytes per parameter in every
// process (process_weights.h): done for models up to this size, or when --save-weights asks for the weights.
constexpr std::int64_t kMaxHashedParamsOverProcesses = std::int64_t{1} << 24;
// In one process it costs a copy of the whole state to the host (params and Adam moments, 16 bytes per
// parameter; a llama3.2-1b run on an H200 spent 19 s between its last step and its exit with the GPU idle,
// this copy and the hash among it, the frees not measured apart: issue 29); done for models up to this size
// (268 M parameters), or with --save-weights.
constexpr std::int64_t kMaxHashedParamsInProcess = std::int64_t{1} << 28;

}  // namespace

RuntimeProgram make_session_program(const Plan& plan, const std::string& plan_file, ExecutorDevice device) {
  try {
    return make_runtime_program(plan, device);
  } catch (const ConfigError& e) {
    rethrow_naming_file(e, plan_file);
  }
}

void check_session_outputs(const SessionOptions& o) {
  if (!o.checkpoint_dir.empty()) prepare_checkpoint_dir(o.checkpoint_dir);
  for (const std::string* out : {&o.save_weights, &o.save_init_weights, &o.save_init_adapters, &o.dump_batches})
    if (!out->empty()) check_output_writable(*out);
}

TrainingSession::TrainingSession(const Plan& plan, RuntimeProgram program, SessionOptions options,
                                 const RankPlacement& placement)
    : options_(std::move(options)),
      fingerprint_(plan_fingerprint(plan)),
      whole_state_(placement.whole_state),
      job_id_(placement.job_id) {
  const auto start = std::chrono::steady_clock::now();
  if (!options_.save_init_adapters.empty() && !plan.lora)
    throw ConfigError(options_.plan_file + ": --save-init-adapters: the plan has no lora section (no adapters)");
  std::shared_ptr<DataSource> data =
      open_dataset({options_.data, options_.data_dtype, plan.training.seed, plan.model.vocab});
  if (!options_.dump_batches.empty())
    data = recorder_ = std::make_shared<BatchRecorder>(data, plan.training.global_batch, plan.training.seq);
  TrainerOptions to;
  to.profile = options_.profile;
  to.trace = options_.trace;
  to.trace_steps = options_.trace_steps;
  to.cuda = placement.device == ExecutorDevice::cuda;
  to.threads = options_.threads;
  to.processes_on_host = placement.processes_on_host;
  try {
    trainer_ = std::make_unique<Trainer>(std::move(program), data, to, placement.backends);
  } catch (const ConfigError& e) {
    rethrow_naming_file(e, options_.plan_file);
  }
  record_.backend = executor_device_name(placement.device);
  record_.data = data->describe();
  record_.target_steps = options_.steps > 0 ? options_.steps : plan.optimizer.total_steps;
  if (!options_.init_weights.empty()) load_full_weights(*trainer_, options_.init_weights);
  if (options_.resume) resume();
  // What `fsdpx sample` and `fsdpx export-hf` read beside the checkpoints (checkpoint/trained_weights.h).
  if (!options_.checkpoint_dir.empty()) write_checkpoint_plan(options_.checkpoint_dir, plan);
  if (!options_.save_init_weights.empty())
    save_full_weights(*trainer_, options_.save_init_weights, record_.start_step);
  if (!options_.save_init_adapters.empty())
    save_adapter_weights(*trainer_, options_.save_init_adapters, record_.start_step);
  record_.init_params_s = trainer_->init_params_s();
  record_.startup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TrainingSession::~TrainingSession() = default;

// How checkpoints reach the other processes of a multi-process job: sums through the trainer's ranks; the
// staging directory is named by the job and the plan (the same in every process).
CheckpointGroup TrainingSession::checkpoint_group() {
  CheckpointGroup g;
  g.leader = trainer_->hosts_rank0();
  FSDP_CHECK(whole_state_ || !job_id_.empty(), "a run with one process per rank needs its launch's job id");
  if (!job_id_.empty()) g.job_token = fmt::format("{:016x}", fnv1a64(job_id_ + ":" + fingerprint_));
  if (!whole_state_) g.sum = [this](const std::vector<std::uint64_t>& w) { return trainer_->sum_over_processes(w); };
  return g;
}

// Loads the newest checkpoint that every process verifies, resharded to the layout of this process's
// ranks; says why newer ones were rejected.
void TrainingSession::resume() {
  const std::string& root = options_.checkpoint_dir;
  std::vector<std::string> rejected;
  auto loaded = load_latest_checkpoint(root, fingerprint_, &rejected, checkpoint_group());
  if (options_.on_rejected_checkpoint)
    for (const std::string& why : loaded ? loaded->rejected : rejected) options_.on_rejected_checkpoint(why);
  if (!loaded)
    throw ConfigError(fmt::format("--resume: no loadable checkpoint in {} ({})", root,
                                  rejected.empty() ? "no step-NNNNNN directory" : "every one failed verification"));
  trainer_->load_state(reshard_state(loaded->state, trainer_->load_layout(), "checkpoint " + loaded->dir));
  record_.resumed_from = loaded->dir;
  record_.start_step = loaded->state.step;
}

void TrainingSession::train(const std::function<void(const StepMetrics&, double elapsed_s)>& on_step) {
  const CheckpointGroup group = checkpoint_group();
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (std::int64_t step = record_.start_step; step < record_.target_steps; ++step) {
    const StepMetrics m = trainer_->step();
    record_.steps.push_back(m);
    if (on_step) on_step(m, elapsed_s());
    const bool save_now = options_.checkpoint_every > 0 && m.step % options_.checkpoint_every == 0;
    if (!options_.checkpoint_dir.empty() && (save_now || m.step == record_.target_steps))
      record_.checkpoints.push_back(
          save_checkpoint(options_.checkpoint_dir, trainer_->local_state(), fingerprint_, group));
  }
  record_.elapsed_s = elapsed_s();
}

void TrainingSession::finish() {
  record_.peak_memory = trainer_->peak_memory();
  const std::int64_t done = record_.start_step + std::int64_t(record_.steps.size());
  const std::int64_t total_params = make_param_layout(trainer_->program().settings.model).total;
  if (whole_state_) {
    if (!options_.save_weights.empty() || total_params <= kMaxHashedParamsInProcess)
      record_.params_hash = params_hash(trainer_->gather_full_params());
    if (!options_.save_weights.empty()) save_full_weights(*trainer_, options_.save_weights, done);
  } else if (!options_.save_weights.empty() ||
             total_params <= kMaxHashedParamsOverProcesses) {
    const TrainerState local = trainer_->local_state();  // every process takes part (a collective)
    const std::vector<float> full = gather_full_params_over_processes(*trainer_, local);
    record_.params_hash = params_hash(full);
    if (!options_.save_weights.empty() && trainer_->hosts_rank0())
      save_full_params(trainer_->program().settings, full, local.adapters.params, options_.save_weights, done);
  }
  if (recorder_) recorder_->write(options_.dump_batches, std::int64_t(record_.steps.size()));
}

}  // namespace fsdpx
