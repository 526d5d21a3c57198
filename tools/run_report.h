// tools/run_report.h — what `fsdpx run` prints: a progress line per step, the final text summary,
// the JSON result ({"steps": [...], "final_loss", "peak_memory_bytes"...}) and the profile file that
// `fsdpx calibrate` reads ("fsdpx-profile/1": the plan plus per-op and per-kernel wall times).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "executor/session/trainer.h"

namespace fsdpx {

inline constexpr const char* kProfileFormat = "fsdpx-profile/1";

struct RunRecord {
  std::string backend = "cpu";
  std::string data;            // DataSource::describe()
  std::int64_t start_step = 0;  // 0, or the step of the checkpoint resumed from
  std::int64_t target_steps = 0;
  std::string resumed_from;  // checkpoint directory; empty when starting fresh
  std::vector<StepMetrics> steps;
  std::vector<std::string> checkpoints;  // directories written
  MemoryPeakBytes peak_memory;
  std::string params_hash;  // FNV-1a 64 of the full fp32 parameters, hex
  double elapsed_s = 0;
};

// "step   12/300  loss 4.1234  lr 3.00e-04  12.3k tok/s  elapsed 3.2 s  ETA 20 s"
std::string progress_line(const StepMetrics& m, const RunRecord& r, double elapsed_s);
std::string run_header_text(const Plan& plan, const RunRecord& r);
std::string run_summary_text(const RunRecord& r);
nlohmann::json run_json(const RunRecord& r);

// Mean wall time of the steps after the first (the first pays one-time allocation), or of the one step.
double measured_step_time_s(const std::vector<StepMetrics>& steps);
nlohmann::json profile_json(const Plan& plan, const OpProfile& p, const RunRecord& r);

}  // namespace fsdpx
