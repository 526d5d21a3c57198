// tools/run_report.h — what `fsdpx run` prints of its RunRecord (executor/session/training_session.h): a
// progress line per step, the final text summary, the JSON result ({"steps": [...], "final_loss", "peak_memory_bytes"...}) and the profile file that
// `fsdpx calibrate` reads ("fsdpx-profile/1": the plan plus per-op and per-kernel wall times).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "executor/session/training_session.h"

namespace fsdpx {

inline constexpr const char* kProfileFormat = "fsdpx-profile/1";

// "step   12/300  loss 4.1234  lr 3.00e-04  12.3k tok/s  elapsed 3.2 s  ETA 20 s"
std::string progress_line(const StepMetrics& m, const RunRecord& r, double elapsed_s);
std::string run_header_text(const Plan& plan, const RunRecord& r);
std::string run_summary_text(const Plan& plan, const RunRecord& r);
nlohmann::json run_json(const RunRecord& r);

// Mean wall time of the steps after the first (the first pays one-time allocation), or of the one step.
double measured_step_time_s(const std::vector<StepMetrics>& steps);
nlohmann::json profile_json(const Plan& plan, const OpProfile& p, const RunRecord& r);

}  // namespace fsdpx
