// tools/prediction_range.h — the 80% range printed beside a predicted step (simulate, plan, demo): where the
// measurement is expected to fall, from the shipped error band of the models on held-back published runs
// (simulator/interval_file.h). Nothing is printed for plans the band does not describe (fsdpx's own
// executor, the CPU host).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/plan.h"

namespace fsdpx {

// One line ("  80% range: ... \n"), or "" where no band applies.
std::string prediction_range_text(const Plan& plan, double tokens_per_s_per_gpu, double step_time_s,
                                  double peak_memory_bytes);
// {"quantiles", "tokens_per_s_per_gpu": [low, high], "step_time_s": [...], "peak_memory_bytes": [...] or
// null, "runs", "made_from"}, or null where no band applies.
nlohmann::json prediction_range_json(const Plan& plan, double tokens_per_s_per_gpu, double step_time_s,
                                     double peak_memory_bytes);

}  // namespace fsdpx
