// planner/candidates.cpp — candidate ordering, descriptions and the evaluation cache.
#include "planner/candidates.h"

#include <algorithm>

#include <fmt/format.h>

namespace fsdpx {

bool better(const Candidate& a, const Candidate& b, Objective objective) {
  if (a.fits != b.fits) return a.fits;
  const auto& ma = a.metrics;
  const auto& mb = b.metrics;
  if (!a.fits && ma.peak_memory_bytes != mb.peak_memory_bytes) return ma.peak_memory_bytes < mb.peak_memory_bytes;
  if (objective == Objective::throughput) {
    if (ma.tokens_per_s_per_gpu != mb.tokens_per_s_per_gpu) return ma.tokens_per_s_per_gpu > mb.tokens_per_s_per_gpu;
    if (ma.peak_memory_bytes != mb.peak_memory_bytes) return ma.peak_memory_bytes < mb.peak_memory_bytes;
  } else {
    if (ma.peak_memory_bytes != mb.peak_memory_bytes) return ma.peak_memory_bytes < mb.peak_memory_bytes;
    if (ma.tokens_per_s_per_gpu != mb.tokens_per_s_per_gpu) return ma.tokens_per_s_per_gpu > mb.tokens_per_s_per_gpu;
  }
  return a.label < b.label;
}

namespace {

// 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st.
std::string ordinal(std::size_t n) {
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return fmt::format("{}{}", n, suffix);
}

std::string recompute_text(const Plan& p) {
  std::int64_t full_first = 0;
  while (full_first < std::int64_t(p.recompute.size()) && p.recompute[std::size_t(full_first)] == RecomputeMode::full)
    ++full_first;
  bool rest_none = true;
  for (std::size_t i = std::size_t(full_first); i < p.recompute.size(); ++i) rest_none &= p.recompute[i] == RecomputeMode::none;
  if (full_first > 0 && full_first < std::int64_t(p.recompute.size()) && rest_none)
    return fmt::format("full on first {}", full_first);
  const auto full = std::count(p.recompute.begin(), p.recompute.end(), RecomputeMode::full);
  const auto none = std::count(p.recompute.begin(), p.recompute.end(), RecomputeMode::none);
  if (full > 0 && full + none == std::int64_t(p.recompute.size()) && none > 0) {
    // torchtitan's layer option n: blocks i with (i + 1) % n == 0.
    std::size_t n = 1;
    while (n < p.recompute.size() && p.recompute[n - 1] != RecomputeMode::full) ++n;
    bool every_nth = true;
    for (std::size_t i = 0; i < p.recompute.size(); ++i)
      every_nth &= (p.recompute[i] == RecomputeMode::full) == ((i + 1) % n == 0);
    if (every_nth) return fmt::format("full on every {} block ({} of {})", ordinal(n), full, p.recompute.size());
    return fmt::format("full on {} of {} blocks", full, p.recompute.size());
  }
  return recompute_mode_name(p.recompute.front());
}

std::string reshard_text(const Plan& p) {
  int kept = 0, partial = 0;
  for (const auto& u : p.units) {
    kept += u.reshard_after_forward == 0;
    partial += u.reshard_after_forward > 1;
  }
  if (partial > 0) return fmt::format(", reshard to {}", p.units.front().reshard_after_forward);
  if (kept == int(p.units.size())) return ", no reshard";
  return "";
}

}  // namespace

std::string family_of(const Plan& p) {
  const auto& par = p.parallelism;
  std::string f = par.dp_replicate > 1 ? fmt::format("hsdp {}x{}", par.dp_replicate, par.dp_shard)
                                       : fmt::format("fsdp {}", par.dp_shard);
  if (par.tp > 1) f += fmt::format(" tp {}", par.tp);
  if (par.cp > 1) f += fmt::format(" cp {}", par.cp);
  if (par.ep > 1) f += fmt::format(" ep {}", par.ep);
  if (par.pp > 1) f += fmt::format(" pp {} {}", par.pp, pipeline_schedule_name(par.pp_schedule));
  if (par.vpp > 1) f += fmt::format(" x{}", par.vpp);
  return f;
}

std::string describe(const Plan& p, const std::string& wrapping) {
  return fmt::format("{}, mb {} x{}, {} ({} units){}, recompute {}, prefetch {}, ag cap {}, reduce {}", family_of(p),
                     p.training.micro_batch, p.grad_accum(), wrapping, p.units.size(), reshard_text(p), recompute_text(p),
                     p.prefetch.forward, p.prefetch.max_all_gathers_in_flight, dtype_name(p.precision.reduce));
}

std::string plan_key(const Plan& p, bool with_recompute) {
  const auto& par = p.parallelism;
  std::string key = fmt::format("{} {} {} {} {} {} {} {} {} {}|{} {} {}|{} {}|", par.dp_replicate, par.dp_shard, par.tp,
                                par.cp, par.pp, par.vpp, int(par.pp_schedule), par.sequence_parallel,
                                int(par.data_parallel), p.training.micro_batch,
                                p.prefetch.forward, p.prefetch.backward, p.prefetch.max_all_gathers_in_flight,
                                int(p.precision.param), int(p.precision.reduce));
  for (const auto& u : p.units) key += fmt::format("{}:{}:{}/", u.modules.size(), u.reshard_after_forward, u.stage);
  key += '|';
  if (with_recompute)
    for (RecomputeMode r : p.recompute) key += "nsfo"[int(r)];
  key += fmt::format("|ep {} {}", par.ep, p.moe_routing.token_imbalance);
  return key;
}

Candidate Evaluator::run(Plan plan, WrapPolicy wrapping, const std::string& wrapping_label) {
  const std::string key = plan_key(plan);
  if (auto it = index_.find(key); it != index_.end()) {
    ++counts_.reused;
    return done_[it->second];
  }
  ++counts_.simulated;
  std::string label = describe(plan, wrapping_label);
  ProbeStart learnt;
  if (plan.parallelism.pp == 1) {
    done_.push_back(evaluate_plan(std::move(plan), limit_bytes_, wrapping, std::move(label), bubbles_, {}, learnt));
  } else {
    ProbeStart& start = probe_starts_[plan_key(plan, false)];
    done_.push_back(evaluate_plan(std::move(plan), limit_bytes_, wrapping, std::move(label), bubbles_, start, learnt));
    start = learnt;
  }
  index_.emplace(key, done_.size() - 1);
  return done_.back();
}

}  // namespace fsdpx
