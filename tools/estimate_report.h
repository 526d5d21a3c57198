// tools/estimate_report.h — how an analytic estimate is shown: the text tables and the JSON object of
// `fsdpx estimate --format json`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cost_models/estimate.h"

namespace fsdpx {

nlohmann::json estimate_json(const Estimate& e, const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s);
std::string estimate_text(const Estimate& e, const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s);

}  // namespace fsdpx
