// simulator/validate_report.cpp — text and JSON rendering of a validation report (validate.h): one row
// per case with predicted, measured and signed error, skipped cases with their reason, then the
// summary table, and the 80% interval's leave-one-source-out coverage (prediction_interval.h).
// Percentages are printed with one decimal; absent values as "-" (text) or null (JSON).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "simulator/prediction_interval.h"
#include "simulator/validate.h"

namespace fsdpx {

namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string cell(const std::optional<double>& v, const char* spec) {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

nlohmann::json stats_json(const ErrorStats& s) {
  return {{"count", s.count}, {"median_abs_pct", s.median_abs_pct}, {"mean_abs_pct", s.mean_abs_pct},
          {"within_10_pct_share", s.within_10_share}, {"within_20_pct_share", s.within_20_share}};
}

nlohmann::json case_json(const CaseResult& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["source"] = r.source_key;
  if (r.predicted)
    j["predicted"] = {{"tokens_per_s_per_gpu", r.predicted->tokens_per_s_per_gpu}, {"mfu", r.predicted->mfu_pct / 100},
                      {"peak_memory_gib", r.predicted->peak_memory_gib},
                      {"peak_memory_metric", r.predicted->peak_memory_metric}, {"step_time_s", r.predicted->step_time_s}};
  else
    j["predicted"] = nullptr;
  const nlohmann::json mfu = r.measured.mfu_pct ? nlohmann::json(r.measured.mfu_pct.value() / 100) : nlohmann::json(nullptr);
  j["measured"] = {{"tokens_per_s_per_gpu", opt(r.measured.tokens_per_s_per_gpu)}, {"mfu", mfu},
                   {"peak_memory_gib", opt(r.measured.peak_memory_gib)}, {"step_time_s", opt(r.measured.step_time_s)}};
  j["error_pct"] = {{"tokens_per_s_per_gpu", opt(r.tokens_error_pct)}, {"mfu", opt(r.mfu_error_pct)},
                    {"peak_memory_gib", opt(r.memory_error_pct)}};
  if (r.tokens_error_range_pct)
    j["error_range_pct"] = {{"tokens_per_s_per_gpu", {r.tokens_error_range_pct->first, r.tokens_error_range_pct->second}}};
  j["skipped"] = r.skipped ? nlohmann::json(*r.skipped) : nlohmann::json(nullptr);
  j["notes"] = r.notes;
  return j;
}

std::string pad_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w;
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i)
      out += i == 0 ? fmt::format("{:<{}}", r[i], w[i]) : fmt::format("  {:>{}}", r[i], w[i]);
    out += '\n';
  }
  return out;
}

std::string stats_cell(const ErrorStats& s) {
  if (s.count == 0) return "-";
  return fmt::format("{:.1f} / {:.1f} / {:.0f}% / {:.0f}% (n={})", s.median_abs_pct, s.mean_abs_pct,
                     100 * s.within_10_share, 100 * s.within_20_share, s.count);
}

nlohmann::json band_json(const ErrorBand& b) {
  return {{"low_error_pct", b.low_pct}, {"high_error_pct", b.high_pct}, {"runs", b.runs}};
}

nlohmann::json interval_json(const IntervalCoverage& c) {
  nlohmann::json sources = nlohmann::json::object();
  for (const SourceCoverage& s : c.sources)
    sources[s.source] = {{"band", band_json(s.band)}, {"runs", s.runs}, {"covered", s.covered}};
  return {{"quantiles", {kIntervalLowQuantile, kIntervalHighQuantile}}, {"band", band_json(c.band)},
          {"leave_one_source_out", {{"runs", c.runs}, {"covered", c.covered}, {"sources", sources}}}};
}

std::string interval_text(const IntervalCoverage& c) {
  if (c.band.runs == 0) return "";
  std::string out = fmt::format(
      "\n80% prediction interval (10th-90th percentile of the signed tokens/s/GPU errors): {:+.1f}% to {:+.1f}% "
      "(n={})\n", c.band.low_pct, c.band.high_pct, c.band.runs);
  if (c.runs == 0) return out;
  out += fmt::format("leave-one-source-out coverage (each source against the other sources' interval): {:.0f}% "
                     "({} of {})\n", 100.0 * c.covered / c.runs, c.covered, c.runs);
  for (const SourceCoverage& s : c.sources)
    out += fmt::format("  {}: {} of {} inside {:+.1f}% to {:+.1f}%\n", s.source, s.covered, s.runs, s.band.low_pct,
                       s.band.high_pct);
  return out;
}

}  // namespace

nlohmann::json validation_json(const ValidationReport& r) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& c : r.cases) cases.push_back(case_json(c));
  nlohmann::json summary = nlohmann::json::object();
  for (const SummaryGroup& g : r.summary)
    summary[g.name] = {{"cases", g.cases}, {"skipped", g.skipped}, {"tokens_per_s_per_gpu", stats_json(g.tokens)},
                       {"mfu", stats_json(g.mfu)}, {"peak_memory_gib", stats_json(g.memory)}};
  return {{"file", r.file},
          {"cases", cases},
          {"summary", summary},
          {"interval", interval_json(leave_one_source_out(r.cases))}};
}

std::string validation_text(const ValidationReport& r) {
  std::vector<std::vector<std::string>> rows{{"case", "tok/s/GPU pred", "meas", "err%", "MFU% pred", "meas", "err%",
                                              "peak GiB pred", "metric", "meas", "err%", "notes"}};
  std::string skipped;
  for (const CaseResult& c : r.cases) {
    if (c.skipped) {
      skipped += fmt::format("  {}: skipped: {}\n", c.id, *c.skipped);
      continue;
    }
    std::string notes;
    for (const auto& n : c.notes) notes += (notes.empty() ? "" : "; ") + n;
    const PredictedRun& p = *c.predicted;
    rows.push_back({c.id, fmt::format("{:.0f}", p.tokens_per_s_per_gpu), cell(c.measured.tokens_per_s_per_gpu, "{:.0f}"),
                    cell(c.tokens_error_pct, "{:+.1f}"), fmt::format("{:.1f}", p.mfu_pct), cell(c.measured.mfu_pct, "{:.1f}"),
                    cell(c.mfu_error_pct, "{:+.1f}"), fmt::format("{:.1f}", p.peak_memory_gib),
                    p.peak_memory_metric, cell(c.measured.peak_memory_gib, "{:.1f}"), cell(c.memory_error_pct, "{:+.1f}"), notes});
  }
  std::string out = fmt::format("validation of {}: {} cases\n\n", r.file, r.cases.size()) + pad_table(rows);
  if (!skipped.empty()) out += "\nskipped (listed, not dropped):\n" + skipped;
  std::vector<std::vector<std::string>> srows{{"source", "cases", "skipped", "tokens/s/GPU |err|: median / mean / <=10% / <=20%",
                                               "MFU |err|", "peak memory |err|"}};
  for (const SummaryGroup& g : r.summary)
    srows.push_back({g.name, std::to_string(g.cases), std::to_string(g.skipped), stats_cell(g.tokens), stats_cell(g.mfu),
                     stats_cell(g.memory)});
  out += "\nsummary (absolute % error: median / mean / share within 10% / share within 20%):\n" + pad_table(srows);
  out += "MFU: PaLM definition (6N + 12*L*H*Q*T per token) over the dense peak the source divides by (bf16; fp8 for\n"
         "llm-foundry fp8 runs); other sources may define it differently.\n";
  return out + interval_text(leave_one_source_out(r.cases));
}

}  // namespace fsdpx
