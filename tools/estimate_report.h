// tools/estimate_report.h — how an analytic estimate is shown: the text tables and the JSON object of
// `fsdpx estimate --format json`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cost_models/estimate.h"

namespace fsdpx {

nlohmann::json estimate_json(const Estimate& e, const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s);
std::string estimate_text(const Estimate& e, const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s);
// The estimate as a bound in two or three lines: memory against the GPU's, the step-time lower bound and its
// terms, the tokens/s and MFU upper bounds (the demo's sanity check of a simulated plan).
std::string estimate_bound_text(const Estimate& e, const ClusterSpec& c);

}  // namespace fsdpx
