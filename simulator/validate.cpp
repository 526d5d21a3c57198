// simulator/validate.cpp — simulate each published run, compare with the measurement, summarise the
// errors overall and per source (see validate.h). Text and JSON output for `fsdpx validate`.
#include "simulator/validate.h"
#include "simulator/validate_fp8.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "cost_models/memory.h"
#include "simulator/reserved_memory.h"
#include "simulator/simulate.h"
#include "simulator/source_mfu.h"

namespace fsdpx {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::optional<double> error_pct(double predicted, const std::optional<double>& measured) {
  if (!measured || *measured <= 0) return std::nullopt;
  return (predicted - *measured) / *measured * 100.0;
}

// The peak in the source's metric: the device total (nvidia-smi), or the caching allocator's peak
// reserved bytes (simulator/reserved_memory.h).
double reported_peak_bytes(const Plan& plan, const Simulation& sim, MemoryMetric metric) {
  if (metric == MemoryMetric::device_total) return sim.peak_memory_total_bytes;
  return reserved_memory(plan, sim).bytes;
}

void collect(std::vector<double>& to, const std::optional<double>& e) {
  if (e) to.push_back(*e);
}

SummaryGroup summarise_group(const std::string& name, const std::vector<const CaseResult*>& rs) {
  SummaryGroup g;
  g.name = name;
  std::vector<double> tokens, mfu, memory;
  for (const CaseResult* r : rs) {
    ++g.cases;
    if (r->skipped) ++g.skipped;
    collect(tokens, r->tokens_error_pct);
    collect(mfu, r->mfu_error_pct);
    collect(memory, r->memory_error_pct);
  }
  g.tokens = error_stats(tokens);
  g.mfu = error_stats(mfu);
  g.memory = error_stats(memory);
  return g;
}

// The case simulated again at both ends of its unsure inter-node bandwidth (case_uncertainty.h): the
// prediction becomes a range, and so does its error.
void add_bandwidth_range(const ValidationCase& c, const std::string& file, CaseResult& r) {
  double low = *r.tokens_error_pct, high = low;
  std::vector<double> tokens;
  for (double bw : {c.inter_node_bw_range->low_gbit_per_gpu, c.inter_node_bw_range->high_gbit_per_gpu}) {
    ValidationCase reading = c;
    reading.inter_node_bw_gbit_per_gpu = bw;
    EngineOptions eo;
    eo.record_ops = false;
    const Simulation sim = simulate(build_case_plan(reading, file).plan, eo);
    tokens.push_back(sim.tokens_per_s_per_gpu);
    const double e = *error_pct(sim.tokens_per_s_per_gpu, c.measured.tokens_per_s_per_gpu);
    low = std::min(low, e);
    high = std::max(high, e);
  }
  r.tokens_error_range_pct = std::pair{low, high};
  r.notes.push_back(fmt::format("inter-node bandwidth unsure, {:g} to {:g} Gb/s per GPU: {:.0f} to {:.0f} tokens/s/GPU",
                                c.inter_node_bw_range->low_gbit_per_gpu, c.inter_node_bw_range->high_gbit_per_gpu,
                                tokens[0], tokens[1]));
}

}  // namespace

ErrorStats error_stats(const std::vector<double>& errors_pct) {
  ErrorStats s;
  s.count = int(errors_pct.size());
  if (errors_pct.empty()) return s;
  std::vector<double> a;
  for (double e : errors_pct) a.push_back(std::fabs(e));
  std::sort(a.begin(), a.end());
  const std::size_t n = a.size();
  s.median_abs_pct = n % 2 == 1 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
  double sum = 0;
  int within_10 = 0, within_20 = 0;
  for (double e : a) {
    sum += e;
    within_10 += e <= 10.0;
    within_20 += e <= 20.0;
  }
  s.mean_abs_pct = sum / double(n);
  s.within_10_share = double(within_10) / double(n);
  s.within_20_share = double(within_20) / double(n);
  return s;
}

CaseResult validate_case(const ValidationCase& c, const std::string& file) {
  CaseResult r;
  r.id = c.id;
  r.source_key = validation_source_key(c);
  r.measured = c.measured;
  r.skipped = validation_skip_reason(c);
  if (r.skipped) return r;
  CasePlan cp;
  Simulation sim;
  try {
    cp = build_case_plan(c, file);
    EngineOptions eo;
    eo.record_ops = false;
    sim = simulate(cp.plan, eo);
  } catch (const ConfigError& e) {
    r.skipped = fmt::format("plan rejected: {}", e.what());
    return r;
  }
  r.notes = cp.notes;
  if (cp.plan.fp8) r.notes.push_back(fp8_attribution_note(cp.plan, fp8_attribution(cp.plan)));
  PredictedRun p;
  p.tokens_per_s_per_gpu = sim.tokens_per_s_per_gpu;
  p.mfu_pct = source_mfu(sim.mfu, c.framework, cp.plan) * 100.0;
  p.peak_memory_gib = reported_peak_bytes(cp.plan, sim, cp.memory_metric) / kGiB;
  p.peak_memory_metric = cp.memory_metric == MemoryMetric::allocator_reserved ? "reserved" : "device";
  p.step_time_s = sim.step_time_s;
  r.predicted = p;
  r.tokens_error_pct = error_pct(p.tokens_per_s_per_gpu, c.measured.tokens_per_s_per_gpu);
  r.mfu_error_pct = error_pct(p.mfu_pct, c.measured.mfu_pct);
  r.memory_error_pct = error_pct(p.peak_memory_gib, c.measured.peak_memory_gib);
  if (c.inter_node_bw_range && r.tokens_error_pct) add_bandwidth_range(c, file, r);
  return r;
}

std::vector<SummaryGroup> summarise_validation(const std::vector<CaseResult>& results) {
  std::vector<const CaseResult*> all;
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CaseResult*>> by_source;
  for (const CaseResult& r : results) {
    all.push_back(&r);
    if (!by_source.count(r.source_key)) order.push_back(r.source_key);
    by_source[r.source_key].push_back(&r);
  }
  std::vector<SummaryGroup> out{summarise_group("overall", all)};
  for (const std::string& s : order) out.push_back(summarise_group(s, by_source[s]));
  return out;
}

ValidationReport run_validation(const ValidationCaseFile& cases) {
  ValidationReport r;
  r.file = cases.file;
  for (const ValidationCase& c : cases.cases) r.cases.push_back(validate_case(c, cases.file));
  r.summary = summarise_validation(r.cases);
  return r;
}

}  // namespace fsdpx
