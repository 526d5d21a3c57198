// tools/prediction_range.cpp — text and JSON of the 80% range beside a prediction (prediction_range.h).
#include "tools/prediction_range.h"

#include <fmt/format.h>

#include "simulator/interval_file.h"
#include "tools/format.h"

namespace fsdpx {

std::string prediction_range_text(const Plan& plan, double tokens_per_s_per_gpu, double step_time_s,
                                  double peak_memory_bytes) {
  const IntervalBands* b = interval_bands_for(plan);
  if (b == nullptr) return "";
  const ValueRange tokens = measured_range(tokens_per_s_per_gpu, b->tokens);
  const ValueRange step = measured_time_range(step_time_s, b->tokens);
  std::string memory;
  if (b->memory) {
    const ValueRange m = measured_range(peak_memory_bytes, *b->memory);
    memory = fmt::format(", peak {} to {}", gib(m.low), gib(m.high));
  }
  return wrap_line(fmt::format("  80% range: {:.0f}-{:.0f} tokens/s/GPU, step {} to {}{} (errors on {} held-back "
                               "published runs)",
                               tokens.low, tokens.high, seconds(step.low), seconds(step.high), memory, b->tokens.runs),
                   4) + "\n";
}

nlohmann::json prediction_range_json(const Plan& plan, double tokens_per_s_per_gpu, double step_time_s,
                                     double peak_memory_bytes) {
  const IntervalBands* b = interval_bands_for(plan);
  if (b == nullptr) return nullptr;
  const ValueRange tokens = measured_range(tokens_per_s_per_gpu, b->tokens);
  const ValueRange step = measured_time_range(step_time_s, b->tokens);
  nlohmann::json memory = nullptr;
  if (b->memory) {
    const ValueRange m = measured_range(peak_memory_bytes, *b->memory);
    memory = {m.low, m.high};
  }
  return {{"quantiles", {kIntervalLowQuantile, kIntervalHighQuantile}},
          {"tokens_per_s_per_gpu", {tokens.low, tokens.high}},
          {"step_time_s", {step.low, step.high}},
          {"peak_memory_bytes", memory},
          {"runs", b->tokens.runs},
          {"made_from", b->made_from}};
}

}  // namespace fsdpx
