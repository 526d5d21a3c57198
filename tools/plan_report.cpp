// tools/plan_report.cpp — text and JSON views of a PlanResult (tools/plan_report.h).
#include "tools/plan_report.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "tools/format.h"
#include "tools/prediction_range.h"

namespace fsdpx {

namespace {

constexpr const char* kCategoryNames[] = {"params", "grads", "optimizer", "activations", "transient", "other"};

nlohmann::json counts_json(const SearchCounts& c) {
  return {{"considered", c.considered}, {"pruned_memory", c.pruned_memory}, {"pruned_bound", c.pruned_bound},
          {"pruned", c.pruned_memory + c.pruned_bound}, {"shapes_refined", c.shapes_refined},
          {"simulated", c.simulated}, {"reused", c.reused}};
}

std::string headroom_text(const PlanResult& res, const Candidate& c) {
  return gib(res.memory_capacity_bytes - c.metrics.peak_memory_bytes);
}

// What the pipeline bought in the chosen plan: its bubble and per-stage memory, against the best plan
// without a pipeline that the search simulated (or why there is none).
std::string pipeline_text(const PlanResult& res) {
  const Candidate& b = *res.best;
  const Parallelism& par = b.plan.parallelism;
  const PipelineReport& p = *res.pipeline;
  std::string out = fmt::format("  pipeline: {} over {} stages{}, {} micro-batches; bubble {:.1f}% of the step\n",
                                pipeline_schedule_name(par.pp_schedule), par.pp,
                                par.vpp > 1 ? fmt::format(" x {} chunks", par.vpp) : "", b.plan.grad_accum(),
                                100 * p.bubble_fraction);
  out += "  peak memory per stage:";
  for (std::size_t s = 0; s < p.stage_peak_memory_bytes.size(); ++s)
    out += fmt::format(" {}{}", gib(p.stage_peak_memory_bytes[s]), s + 1 < p.stage_peak_memory_bytes.size() ? "," : "\n");
  if (!res.best_without_pipeline) {
    out += "  without a pipeline: no fitting plan was found (the batch does not split over the data-parallel ranks, "
           "or memory)\n";
    return out;
  }
  const Candidate& n = *res.best_without_pipeline;
  out += fmt::format("  without a pipeline the best fitting plan reaches {:.0f} tokens/s/GPU ({:+.1f}%), peak {}: {}\n",
                     n.metrics.tokens_per_s_per_gpu,
                     100 * (n.metrics.tokens_per_s_per_gpu / b.metrics.tokens_per_s_per_gpu - 1),
                     gib(n.metrics.peak_memory_bytes), n.label);
  return out;
}

nlohmann::json pipeline_json(const PlanResult& res) {
  nlohmann::json j = {{"bubble_fraction", res.pipeline->bubble_fraction},
                      {"stage_peak_memory_bytes", res.pipeline->stage_peak_memory_bytes},
                      {"stage_idle_fraction", res.pipeline->stage_idle_fraction}};
  if (res.best_without_pipeline) j["best_without_pipeline"] = candidate_json(*res.best_without_pipeline);
  return j;
}

// The key of one ", "-separated part of a candidate's label (planner/candidates.cpp describe(): family, "mb",
// wrapping "(N units)", the optional reshard part, "recompute", "prefetch", "ag cap", "reduce").
std::string label_part_key(const std::string& part, std::size_t index) {
  if (index == 0) return "family";
  if (part.find("reshard") != std::string::npos) return "reshard";
  if (part.find(" units)") != std::string::npos) return "wrapping";
  return part.substr(0, part.find(' '));
}

std::vector<std::string> label_parts(const std::string& label) {
  std::vector<std::string> parts;
  for (std::size_t start = 0; start <= label.size();) {
    const std::size_t end = std::min(label.find(", ", start), label.size());
    parts.push_back(label.substr(start, end - start));
    start = end + 2;
  }
  return parts;
}

// What an alternative's label changes against the chosen plan's: its parts the chosen plan lacks, and a part
// only the chosen plan has (the reshard part is left out for the default, reshard after forward).
std::string label_difference(const std::string& chosen, const std::string& alternative) {
  const std::vector<std::string> a = label_parts(chosen), b = label_parts(alternative);
  std::vector<std::string> keys_b, diff;
  for (std::size_t i = 0; i < b.size(); ++i) {
    keys_b.push_back(label_part_key(b[i], i));
    if (std::find(a.begin(), a.end(), b[i]) == a.end()) diff.push_back(b[i]);
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string key = label_part_key(a[i], i);
    if (std::find(keys_b.begin(), keys_b.end(), key) != keys_b.end()) continue;
    diff.push_back(key == "reshard" ? "reshard after forward" : "without " + a[i]);
  }
  if (diff.empty()) return alternative + " (differs below the label: --format json)";
  std::string out;
  for (const std::string& d : diff) out += (out.empty() ? "" : ", ") + d;
  return out;
}

// The chosen plan and the runners-up, one numbers row each with what differs from the chosen plan, then why
// it lost, both under the label column so that no line passes kTextWidth.
std::string top_plans_text(const PlanResult& res, int top_k) {
  const std::string head = fmt::format("  {:>2}  {:>12}  {:>6}  {:>10}  ", "#", "tokens/s/GPU", "MFU", "peak");
  const std::size_t label_column = head.size();
  std::string out = head + "what differs from #1, then why it lost\n";
  auto row = [&](std::size_t rank, const Candidate& c, const std::string& what) {
    return wrap_line(fmt::format("  {:>2}  {:>12.0f}  {:>5.1f}%  {:>10}  {}", rank, c.metrics.tokens_per_s_per_gpu,
                                 100 * c.metrics.mfu, gib(c.metrics.peak_memory_bytes), what),
                     label_column) + "\n";
  };
  out += row(1, *res.best, "the chosen plan");
  for (std::size_t i = 0; i < res.top.size() && int(i) < top_k; ++i) {
    const Candidate& c = res.top[i];
    out += row(i + 2, c, label_difference(res.best->label, c.label));
    out += wrap_line(std::string(label_column, ' ') + "lost: " + c.lost_because, label_column) + "\n";
  }
  return out;
}

}  // namespace

nlohmann::json candidate_json(const Candidate& c) {
  const auto& m = c.metrics;
  nlohmann::json mem = nlohmann::json::object();
  for (std::size_t i = 0; i < m.peak_memory_by_category_bytes.size(); ++i)
    mem[kCategoryNames[i]] = m.peak_memory_by_category_bytes[i];
  nlohmann::json j = {{"label", c.label},
                      {"wrapping", wrap_policy_name(c.wrapping)},
                      {"fits", c.fits},
                      {"step_time_s", m.step_time_s},
                      {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
                      {"mfu", m.mfu},
                      {"exposed_comm_s", m.exposed_comm_s},
                      {"compute_s", m.compute_s},
                      {"peak_memory_bytes", m.peak_memory_bytes},
                      {"peak_memory_by_category_bytes", mem}};
  if (!c.lost_because.empty()) j["lost_because"] = c.lost_because;
  return j;
}

nlohmann::json plan_search_json(const PlanResult& res) {
  nlohmann::json j;
  j["plan"] = res.best ? plan_to_json(res.best->plan) : nlohmann::json(nullptr);
  if (res.best) {
    const auto& m = res.best->metrics;
    j["chosen"] = candidate_json(*res.best);
    j["chosen"]["range_80"] = prediction_range_json(res.best->plan, m.tokens_per_s_per_gpu, m.step_time_s,
                                                    m.peak_memory_bytes);
  }
  if (res.pipeline) j["pipeline"] = pipeline_json(res);
  j["alternatives"] = nlohmann::json::array();
  for (const auto& c : res.top) {
    nlohmann::json a = candidate_json(c);
    a["plan"] = plan_to_json(c.plan);
    j["alternatives"].push_back(std::move(a));
  }
  j["pareto"] = nlohmann::json::array();
  for (const auto& c : res.pareto) j["pareto"].push_back(candidate_json(c));
  j["search"] = counts_json(res.counts);
  j["memory_capacity_bytes"] = res.memory_capacity_bytes;
  j["memory_margin_bytes"] = res.memory_margin_bytes;
  j["memory_limit_bytes"] = res.memory_limit_bytes;
  j["fastest_tokens_per_s_per_gpu"] = res.fastest_tokens_per_s_per_gpu;
  if (!res.best) {
    j["least_memory_needed_bytes"] = res.least_memory_needed_bytes;
    j["suggestions"] = res.suggestions;
  }
  return j;
}

std::string plan_search_text(const PlanResult& res, int top_k, bool pareto) {
  const SearchCounts& n = res.counts;
  std::string out = fmt::format(
      "search: {} candidates, {} pruned ({} by memory, {} by throughput), {} shapes refined, "
      "{} simulated, {} reused\n",
      n.considered, n.pruned_memory + n.pruned_bound, n.pruned_memory, n.pruned_bound, n.shapes_refined, n.simulated,
      n.reused);
  if (!res.best) return wrap_text(out);
  const Candidate& b = *res.best;
  const auto& m = b.metrics;
  out += fmt::format("chosen plan: {}\n", b.label);
  out += fmt::format("  step {}, {:.0f} tokens/s/GPU, MFU {:.1f}%, exposed communication {}\n", seconds(m.step_time_s),
                     m.tokens_per_s_per_gpu, 100 * m.mfu, seconds(m.exposed_comm_s));
  out += prediction_range_text(b.plan, m.tokens_per_s_per_gpu, m.step_time_s, m.peak_memory_bytes);
  const std::string costs = fmt::format("predicted for the costs of {}{}", framework_name(b.plan.framework),
                                        b.plan.framework == Framework::fsdpx
                                            ? "'s executor"
                                            : (b.plan.compiled ? " under torch.compile" : " in eager mode"));
  if (b.plan.planner)
    out += fmt::format("  target {} (tolerance {:.1f}%), {}; reduction in {} (bf16 {})\n", b.plan.planner->target,
                       100 * b.plan.planner->throughput_tolerance, costs, dtype_name(b.plan.precision.reduce),
                       b.plan.planner->allow_bf16_reduce ? "allowed" : "not allowed");
  else
    out += "  " + costs + "\n";
  out += fmt::format("  memory: peak {} of {}, headroom {}; plans may use {} ({} margin kept free)\n",
                     gib(m.peak_memory_bytes), gib(res.memory_capacity_bytes), headroom_text(res, b),
                     gib(res.memory_limit_bytes), gib(res.memory_margin_bytes));
  if (res.pipeline) out += pipeline_text(res);
  out += "  at the peak (GiB):";
  for (std::size_t i = 0; i < m.peak_memory_by_category_bytes.size(); ++i)
    out += fmt::format(" {} {:.2f}{}", kCategoryNames[i], m.peak_memory_by_category_bytes[i] / (1024.0 * 1024.0 * 1024.0),
                       i + 1 < 6 ? "," : "\n");
  out += "alternatives (one per family, then other strategies):\n" + top_plans_text(res, top_k);
  if (!pareto) return wrap_text(out);
  out += fmt::format("Pareto frontier (throughput vs peak memory): {} plans\n", res.pareto.size());
  for (const auto& c : res.pareto)
    out += wrap_line(fmt::format("  {:>10}  {:>8.0f} tokens/s/GPU  {}", gib(c.metrics.peak_memory_bytes),
                                 c.metrics.tokens_per_s_per_gpu, c.label),
                     38) + "\n";
  return wrap_text(out);
}

std::string no_fit_message(const PlanResult& res, const PlanRequest& r, const std::string& model_input,
                           const std::string& cluster_input) {
  std::string msg = fmt::format("no plan fits model {} ({}) on cluster {} ({} nodes x {} GPUs, {} ranks) at seq {} and "
                                "global batch {}: the bound that failed is memory per GPU, {} ({} capacity less the {} "
                                "margin), and the least any plan needs is {}",
                                model_input, r.model.name, cluster_input, r.cluster.nodes, r.cluster.gpus_per_node,
                                r.cluster.world_size(), r.seq, r.global_batch, gib(res.memory_limit_bytes),
                                gib(res.memory_capacity_bytes), gib(res.memory_margin_bytes),
                                gib(res.least_memory_needed_bytes));
  if (!res.suggestions.empty()) {
    msg += "; what would make it fit: ";
    for (std::size_t i = 0; i < res.suggestions.size(); ++i) msg += (i ? "; " : "") + res.suggestions[i];
  }
  return msg;
}

}  // namespace fsdpx
