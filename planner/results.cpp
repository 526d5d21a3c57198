// planner/results.cpp — choice, families, explanations and the Pareto frontier of planner/results.h.
#include "planner/results.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "planner/candidates.h"

namespace fsdpx {

namespace {

// Throughputs this close print as 0.0% apart: a tie, not a loss.
constexpr double kTie = 5e-4;

std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }
std::string ms_text(double s) { return fmt::format("{:.1f} ms", s * 1e3); }

std::string slower_because(const Candidate& c, const Candidate& best) {
  const auto& m = c.metrics;
  const auto& b = best.metrics;
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

// Within the tolerance of the fastest, the least peak wins; then throughput; then the label.
const Candidate* choose(const std::vector<Candidate>& sorted, double tolerance) {
  if (sorted.empty() || !sorted.front().fits) return nullptr;
  const double floor_tps = (1.0 - tolerance) * sorted.front().metrics.tokens_per_s_per_gpu;
  const Candidate* chosen = &sorted.front();
  for (const Candidate& c : sorted) {
    if (!c.fits || c.metrics.tokens_per_s_per_gpu < floor_tps) break;
    if (c.metrics.peak_memory_bytes < chosen->metrics.peak_memory_bytes) chosen = &c;
  }
  return chosen;
}

std::string strategy_of(const Candidate& c) {
  const Plan& p = c.plan;
  const bool partial = std::adjacent_find(p.recompute.begin(), p.recompute.end(), std::not_equal_to<>()) != p.recompute.end();
  return fmt::format("{} mb {} {} {} {}", family_of(p), p.training.micro_batch, wrap_policy_name(c.wrapping),
                     partial ? "partial" : recompute_mode_name(p.recompute.front()), p.units.front().reshard_after_forward);
}

// One per family first (the best of each, by the objective), then distinct strategies to fill top_k.
// The fastest plan comes first when the tolerance chose another one for its headroom.
std::vector<Candidate> alternatives(const std::vector<Candidate>& sorted, const Candidate& chosen, int top_k) {
  std::vector<Candidate> out;
  if (top_k > 0 && sorted.front().label != chosen.label) out.push_back(sorted.front());
  std::vector<std::string> seen{family_of(chosen.plan)};
  for (const Candidate& c : out) seen.push_back(family_of(c.plan));
  for (const Candidate& c : sorted) {
    if (int(out.size()) >= top_k) return out;
    const std::string f = family_of(c.plan);
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(f);
    out.push_back(c);
  }
  std::vector<std::string> strategies{strategy_of(chosen)};
  for (const Candidate& c : out) strategies.push_back(strategy_of(c));
  for (const Candidate& c : sorted) {
    if (int(out.size()) >= top_k) break;
    const std::string s = strategy_of(c);
    if (std::find(strategies.begin(), strategies.end(), s) != strategies.end() || c.label == chosen.label) continue;
    strategies.push_back(s);
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string lost_because(const Candidate& c, const Candidate& chosen, const PlanRequest& r, const PlanResult& res) {
  const auto& m = c.metrics;
  const auto& b = chosen.metrics;
  if (!c.fits)
    return fmt::format("out of memory: device peak {} > {} (capacity {} less the {} margin)", gib_text(m.peak_memory_bytes),
                       gib_text(res.memory_limit_bytes), gib_text(res.memory_capacity_bytes),
                       gib_text(res.memory_margin_bytes));
  const double rel = m.tokens_per_s_per_gpu / b.tokens_per_s_per_gpu - 1.0;
  const double headroom = res.memory_capacity_bytes - m.peak_memory_bytes;
  const double chosen_headroom = res.memory_capacity_bytes - b.peak_memory_bytes;
  if (r.objective == Objective::memory)
    return m.peak_memory_bytes > b.peak_memory_bytes
               ? fmt::format("more memory: peak {} vs {}", gib_text(m.peak_memory_bytes), gib_text(b.peak_memory_bytes))
               : fmt::format("same peak, lower throughput: {:.0f} vs {:.0f} tokens/s/GPU", m.tokens_per_s_per_gpu,
                             b.tokens_per_s_per_gpu);
  if (std::abs(rel) < kTie)
    return m.peak_memory_bytes > b.peak_memory_bytes
               ? fmt::format("ties on throughput ({:+.2f}%) with less headroom: {} vs {}", 100 * rel,
                             gib_text(headroom), gib_text(chosen_headroom))
               : "ties on throughput and memory; the chosen plan comes first by name (deterministic order)";
  if (m.tokens_per_s_per_gpu >= (1.0 - r.throughput_tolerance) * res.fastest_tokens_per_s_per_gpu)
    return fmt::format("{:.2f}% {} tokens/s, within the {:.1f}% tolerance, but less headroom: {} vs {}",
                       100 * std::abs(rel), rel > 0 ? "more" : "fewer", 100 * r.throughput_tolerance,
                       gib_text(headroom), gib_text(chosen_headroom));
  return slower_because(c, chosen);
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
  const Candidate* chosen = choose(all, r.objective == Objective::throughput ? r.throughput_tolerance : 0.0);
  if (!chosen) return;
  res.fastest_tokens_per_s_per_gpu = all.front().metrics.tokens_per_s_per_gpu;
  Candidate best = *chosen;
  for (Candidate c : alternatives(all, best, r.top_k)) {
    c.lost_because = lost_because(c, best, r, res);
    res.top.push_back(std::move(c));
  }
  best.plan.planner = PlannerRecord{target_name(r.target), res.memory_capacity_bytes, res.memory_margin_bytes,
                                    r.throughput_tolerance, r.allow_bf16_reduce};
  best.plan.notes = fmt::format(
      "fsdpx plan (objective {}, target {}): best of {} simulated plans ({} considered, {} shapes refined, {} pruned "
      "by the memory bound, {} by the throughput bound): {}; {} wrapping; peak {} with {} kept free.",
      objective_name(r.objective), target_name(r.target), res.counts.simulated, res.counts.considered,
      res.counts.shapes_refined, res.counts.pruned_memory, res.counts.pruned_bound, best.label,
      wrap_policy_name(best.wrapping), gib_text(best.metrics.peak_memory_bytes), gib_text(res.memory_margin_bytes));
  if (!res.top.empty())
    best.plan.notes += fmt::format(" Runner-up: {} ({}).", res.top.front().label, res.top.front().lost_because);
  res.best = std::move(best);
}

}  // namespace fsdpx
