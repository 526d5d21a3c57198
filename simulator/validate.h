// simulator/validate.h — runs every case of a published-runs file through the simulator and compares
// predicted with measured tokens/s/GPU, MFU and peak memory: per-case signed errors, then median and
// mean absolute % error and the share within 10% and 20%, overall and per source. Cases the simulator
// cannot model (pipeline parallelism) are listed with the reason, never dropped. Leaves out any fitting.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "simulator/validation_case.h"

namespace fsdpx {

struct PredictedRun {
  double tokens_per_s_per_gpu = 0;
  // PaLM model FLOPs (6N + 12·L·H·Q·T per token) over the dense peak the case's framework divides by
  // (simulator/source_mfu.h: bf16, or fp8 for llm-foundry's amp_fp8 runs).
  double mfu_pct = 0;
  double peak_memory_gib = 0;
  // What peak_memory_gib predicts, the metric the case's source reports (validation_case.h MemoryMetric):
  // "reserved" (the caching allocator's peak reserved bytes) or "device" (nvidia-smi's device total).
  std::string peak_memory_metric;
  double step_time_s = 0;
};

struct CaseResult {
  std::string id;
  std::string source_key;
  std::optional<std::string> skipped;  // reason; nullopt when simulated
  std::optional<PredictedRun> predicted;
  MeasuredRun measured;
  std::vector<std::string> notes;  // assumptions made for this case
  // (predicted - measured) / measured x 100, where both exist.
  std::optional<double> tokens_error_pct, mfu_error_pct, memory_error_pct;
  // Lowest and highest tokens/s/GPU error over the readings of an input the source leaves unsure
  // (ValidationCase::inter_node_bw_range), the case's own reading included; nullopt when none is unsure.
  std::optional<std::pair<double, double>> tokens_error_range_pct;
};

// Statistics of absolute % errors.
struct ErrorStats {
  int count = 0;
  double median_abs_pct = 0;
  double mean_abs_pct = 0;
  double within_10_share = 0;  // fraction in [0, 1]
  double within_20_share = 0;
};
ErrorStats error_stats(const std::vector<double>& errors_pct);

struct SummaryGroup {
  std::string name;  // "overall" or a source key
  int cases = 0;
  int skipped = 0;
  ErrorStats tokens, mfu, memory;
};

struct ValidationReport {
  std::string file;
  std::vector<CaseResult> cases;
  std::vector<SummaryGroup> summary;  // "overall" first, then sources in order of first appearance
};

CaseResult validate_case(const ValidationCase& c, const std::string& file);
ValidationReport run_validation(const ValidationCaseFile& cases);
std::vector<SummaryGroup> summarise_validation(const std::vector<CaseResult>& results);

nlohmann::json validation_json(const ValidationReport& r);
std::string validation_text(const ValidationReport& r);

}  // namespace fsdpx
