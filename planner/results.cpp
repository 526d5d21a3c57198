// planner/results.cpp — ranking, explanations and suggestions of planner/results.h.
#include "planner/results.h"

#include <algorithm>

#include <fmt/format.h>

#include "planner/candidates.h"

namespace fsdpx {

namespace {

std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }
std::string ms_text(double s) { return fmt::format("{:.1f} ms", s * 1e3); }

}  // namespace

std::string lost_because(const Candidate& c, const Candidate& best, Objective objective, double limit_bytes) {
  const auto& m = c.metrics;
  const auto& b = best.metrics;
  if (!c.fits)
    return fmt::format("out of memory: peak {} > limit {}", gib_text(m.peak_memory_bytes), gib_text(limit_bytes));
  if (objective == Objective::memory || m.tokens_per_s_per_gpu == b.tokens_per_s_per_gpu) {
    if (m.peak_memory_bytes > b.peak_memory_bytes)
      return fmt::format("more memory: peak {} vs {}", gib_text(m.peak_memory_bytes), gib_text(b.peak_memory_bytes));
    return fmt::format("lower throughput at no less memory: {:.0f} vs {:.0f} tokens/s/GPU", m.tokens_per_s_per_gpu,
                       b.tokens_per_s_per_gpu);
  }
  const double slower = 100.0 * (1.0 - m.tokens_per_s_per_gpu / b.tokens_per_s_per_gpu);
  // Per token, so that plans with different micro-batch counts compare: which part of the step grew.
  const double comm_delta_s = m.exposed_comm_s - b.exposed_comm_s * m.step_time_s / b.step_time_s;
  const double compute_delta_s = m.compute_s - b.compute_s * m.step_time_s / b.step_time_s;
  if (comm_delta_s >= compute_delta_s)
    return fmt::format("exposed communication: {} vs {} of the step ({:.1f}% fewer tokens/s)", ms_text(m.exposed_comm_s),
                       ms_text(b.exposed_comm_s), slower);
  return fmt::format("more compute (recompute, smaller kernels, TP/CP collectives): {} vs {} ({:.1f}% fewer tokens/s)",
                     ms_text(m.compute_s), ms_text(b.compute_s), slower);
}

std::vector<Candidate> pareto_frontier(const std::vector<Candidate>& all) {
  std::vector<const Candidate*> fit;
  for (const auto& c : all)
    if (c.fits) fit.push_back(&c);
  std::sort(fit.begin(), fit.end(), [](const Candidate* a, const Candidate* b) {
    if (a->metrics.peak_memory_bytes != b->metrics.peak_memory_bytes)
      return a->metrics.peak_memory_bytes < b->metrics.peak_memory_bytes;
    if (a->metrics.tokens_per_s_per_gpu != b->metrics.tokens_per_s_per_gpu)
      return a->metrics.tokens_per_s_per_gpu > b->metrics.tokens_per_s_per_gpu;
    return a->label < b->label;
  });
  std::vector<Candidate> out;
  double best_tps = -1;
  for (const Candidate* c : fit) {
    if (c->metrics.tokens_per_s_per_gpu <= best_tps) continue;  // dominated: no faster, no smaller
    best_tps = c->metrics.tokens_per_s_per_gpu;
    out.push_back(*c);
  }
  return out;
}

void finish_result(PlanResult& res, std::vector<Candidate> all, const PlanRequest& r) {
  std::sort(all.begin(), all.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b, r.objective); });
  res.pareto = pareto_frontier(all);
  if (all.empty() || !all.front().fits) return;
  Candidate best = all.front();
  for (std::size_t i = 1; i < all.size() && int(res.top.size()) < r.top_k; ++i) {
    Candidate c = all[i];
    c.lost_because = lost_because(c, best, r.objective, res.memory_limit_bytes);
    res.top.push_back(std::move(c));
  }
  best.plan.notes = fmt::format(
      "fsdpx plan (objective {}): best of {} simulated plans ({} considered, {} pruned by the memory bound, {} by "
      "the throughput bound): {}; {} wrapping.",
      objective_name(r.objective), res.counts.simulated, res.counts.considered, res.counts.pruned_memory,
      res.counts.pruned_bound, best.label, wrap_policy_name(best.wrapping));
  if (!res.top.empty())
    best.plan.notes += fmt::format(" Runner-up: {} ({}).", res.top.front().label, res.top.front().lost_because);
  res.best = std::move(best);
}

std::vector<std::string> fit_suggestions(const PlanRequest& r, const Plan& least, const MemoryBound& bound,
                                         double least_peak_bytes) {
  std::vector<std::string> out;
  const double limit = *r.memory_limit_bytes;
  // Sharded state falls as 1/dp_shard (ZeRO paper: 16P/N); the rest of the peak stays.
  const double rest_bytes = least_peak_bytes - bound.state_bytes;
  const int world = r.cluster.world_size();
  bool found = false;
  for (int f = 2; f <= 1024 && rest_bytes < limit; f *= 2) {
    if (bound.state_bytes / f + rest_bytes > limit) continue;
    out.push_back(fmt::format("more GPUs: about {}x ({} ranks) shards the model state to {} per GPU", f, world * f,
                              gib_text(bound.state_bytes / f)));
    found = true;
    break;
  }
  if (!found)
    out.push_back(fmt::format("more GPUs alone do not fit: activations and buffers need {} besides the state",
                              gib_text(std::max(0.0, rest_bytes))));
  if (least.training.micro_batch > 1) out.push_back("a smaller micro-batch (1 sequence per rank)");
  bool all_full = true;
  for (RecomputeMode m : least.recompute) all_full &= m == RecomputeMode::full;
  if (!all_full) out.push_back("full activation recompute on every block");
  if (bound.activation_bytes > 0.25 * limit)
    out.push_back(fmt::format("shorter sequences or more context parallelism: one micro-batch saves {} of activations",
                              gib_text(bound.activation_bytes)));
  out.push_back(fmt::format("a memory limit of at least {} (--memory-limit)", gib_text(least_peak_bytes)));
  return out;
}

}  // namespace fsdpx
