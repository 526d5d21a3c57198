// tools/run_report.cpp — text and JSON output of `fsdpx run`.
#include "tools/run_report.h"

#include <fmt/format.h>

#include "cost_models/params.h"
#include "tools/format.h"

namespace fsdpx {

namespace {

std::string rate(double per_s) {
  if (per_s >= 1e6) return fmt::format("{:.2f}M", per_s / 1e6);
  if (per_s >= 1e3) return fmt::format("{:.1f}k", per_s / 1e3);
  return fmt::format("{:.0f}", per_s);
}

std::string mib(double bytes) { return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0)); }

// "peak memory (worst rank): 2.48 MiB (activations 1.21 MiB, grads ...)": the total first, then each category.
template <typename Map>
std::string peak_memory_line(const Map& peak_bytes) {
  const auto total = peak_bytes.find("total");
  std::string line = "peak memory (worst rank)", parts;
  if (total != peak_bytes.end()) line += ": " + mib(double(total->second));
  for (const auto& [category, bytes] : peak_bytes)
    if (category != "total") parts += (parts.empty() ? "" : ", ") + category + " " + mib(double(bytes));
  return line + (parts.empty() ? "" : " (" + parts + ")") + "\n";
}

}  // namespace

// fp16 runs show the step's loss scale; a step the scaler skipped says so.
std::string progress_line(const StepMetrics& m, const RunRecord& r, double elapsed_s) {
  const double done = double(m.step - r.start_step), left = double(r.target_steps - m.step);
  const double eta_s = done > 0 ? elapsed_s / done * left : 0;
  const bool scaled = m.loss_scale > 0;
  std::string note;
  if (m.skipped) note = scaled ? "  (skipped: inf/NaN gradients, scale backed off)" : "  (skipped: non-finite values)";
  return fmt::format("step {:>5}/{}  loss {:.4f}  lr {:.2e}{}  {} tok/s  elapsed {:.1f} s  ETA {:.1f} s{}", m.step,
                     r.target_steps, m.loss, m.lr, scaled ? fmt::format("  scale {:g}", m.loss_scale) : "",
                     rate(m.tokens_per_s), elapsed_s, eta_s, note);
}

std::string run_header_text(const Plan& plan, const RunRecord& r) {
  const Parallelism& p = plan.parallelism;
  std::string mesh = fmt::format("dp_shard {} x dp_replicate {}", p.dp_shard, p.dp_replicate);
  if (p.pp > 1)
    mesh = fmt::format("pp {} ({}{}, {} micro-batches) x ", p.pp, pipeline_schedule_name(p.pp_schedule),
                       p.vpp > 1 ? fmt::format(", vpp {}", p.vpp) : "", plan.grad_accum()) + mesh;
  if (p.cp > 1) mesh += fmt::format(" x cp {}", p.cp);
  if (p.tp > 1) mesh += fmt::format(" x tp {}{}", p.tp, p.sequence_parallel ? " (sequence parallel)" : "");
  std::string s = fmt::format("training {} on {} ({} backend, {} ranks: {})\n", plan.model.name, r.data, r.backend,
                              p.world_size(), mesh);
  s += fmt::format("seq {}, global batch {} sequences ({} tokens), micro-batch {}, seed {}\n", plan.training.seq,
                   plan.training.global_batch, plan.training.global_batch * plan.training.seq,
                   plan.training.micro_batch, plan.training.seed);
  if (!r.resumed_from.empty()) s += fmt::format("resumed from {} (step {})\n", r.resumed_from, r.start_step);
  return wrap_text(s);
}

// The run's rate over its steps after the first (which pays warm-up: allocations, first-touch, thread
// start), and MFU as the simulator reports it: PaLM's model FLOPs per token against the cluster file's
// peak for the plan's compute dtype.
std::string run_summary_text(const Plan& plan, const RunRecord& r) {
  if (r.steps.empty()) return fmt::format("nothing to do: already at step {} of {}\n", r.start_step, r.target_steps);
  const double tokens_per_s =
      double(plan.training.global_batch) * double(plan.training.seq) / measured_step_time_s(r.steps);
  const double per_gpu = tokens_per_s / double(plan.parallelism.world_size());
  const double mfu = per_gpu * model_flops_per_token(plan.model, plan.training.seq) /
                     plan.cluster.gpu.peak(plan.precision.param);
  std::string s = fmt::format("done: steps {}..{} in {:.2f} s; loss {:.4f} -> {:.4f}\n", r.steps.front().step,
                              r.steps.back().step, r.elapsed_s, r.steps.front().loss, r.steps.back().loss);
  s += fmt::format("mean{}: {} tok/s, {} tok/s per rank, MFU {:.1f}% of the cluster's {} peak\n",
                   r.steps.size() > 1 ? " after the first step" : "", rate(tokens_per_s), rate(per_gpu), 100 * mfu,
                   dtype_name(plan.precision.param));
  s += peak_memory_line(r.peak_memory);
  for (const auto& d : r.checkpoints) s += fmt::format("checkpoint written: {}\n", d);
  s += r.params_hash.empty()
           ? std::string("parameters hash: not computed for a model this size (--save-weights computes it)\n")
           : fmt::format("parameters hash (FNV-1a 64 of fp32): {}\n", r.params_hash);
  return wrap_text(s);
}

nlohmann::json run_json(const RunRecord& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepMetrics& m : r.steps) {
    steps.push_back({{"step", m.step}, {"loss", m.loss}, {"tokens_per_s", m.tokens_per_s}, {"time_s", m.time_s},
                     {"lr", m.lr}, {"grad_norm", m.grad_norm}, {"skipped", m.skipped}});
    if (m.loss_scale > 0) steps.back()["loss_scale"] = m.loss_scale;
  }
  nlohmann::json j{{"backend", r.backend},
                   {"data", r.data},
                   {"start_step", r.start_step},
                   {"target_steps", r.target_steps},
                   {"resumed_from", r.resumed_from.empty() ? nlohmann::json() : nlohmann::json(r.resumed_from)},
                   {"steps", steps},
                   {"final_loss", r.steps.empty() ? nlohmann::json() : nlohmann::json(r.steps.back().loss)},
                   {"peak_memory_bytes", r.peak_memory},
                   {"checkpoints", r.checkpoints},
                   {"final_params_hash", r.params_hash},
                   {"elapsed_s", r.elapsed_s},
                   {"startup_s", r.startup_s},
                   {"init_params_s", r.init_params_s}};
  return j;
}

double measured_step_time_s(const std::vector<StepMetrics>& steps) {
  if (steps.empty()) return 0;
  if (steps.size() == 1) return steps.front().time_s;
  double sum = 0;
  for (std::size_t i = 1; i < steps.size(); ++i) sum += steps[i].time_s;
  return sum / double(steps.size() - 1);
}

nlohmann::json profile_json(const Plan& plan, const OpProfile& p, const RunRecord& r) {
  nlohmann::json step_times = nlohmann::json::array(), skipped = nlohmann::json::array();
  for (const StepMetrics& m : r.steps) {
    step_times.push_back(m.time_s);
    if (m.skipped) skipped.push_back(m.step);
  }
  nlohmann::json j{{"format", kProfileFormat},
                   {"backend", r.backend},
                   {"steps", p.steps},
                   {"step_time_s", measured_step_time_s(r.steps)},
                   {"step_times_s", step_times},
                   {"op_time_s", p.op_time_s},
                   {"kernel_time_s", p.kernel_time_s},
                   {"kernel_calls", p.kernel_calls},
                   {"collective_time_s", p.collective_time_s},
                   {"collective_calls", p.collective_calls},
                   {"skipped_steps", skipped},
                   {"plan", plan_to_json(plan)}};
  if (plan.loss_scale) {
    nlohmann::json scales = nlohmann::json::array();
    for (const StepMetrics& m : r.steps) scales.push_back(m.loss_scale);
    j["loss_scales"] = scales;
  }
  return j;
}

}  // namespace fsdpx
