// tools/simulation_report.h — how a simulated step is shown: the text summary (per phase, memory at the
// peak, MFU) and the JSON object of `fsdpx simulate --format json`, shared by the commands that simulate.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "simulator/simulate.h"

namespace fsdpx {

nlohmann::json simulation_json(const Plan& plan, const Simulation& sim);
std::string simulation_text(const Plan& plan, const Simulation& sim);
// The step in a few lines: the per-phase table, the step's rates and its peak memory (the demo, after the
// plan search has shown the memory by category).
std::string simulation_brief_text(const Plan& plan, const Simulation& sim);

}  // namespace fsdpx
