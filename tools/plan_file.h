// tools/plan_file.h — writes a plan the way its readers will read it: the JSON is parsed back with the
// readers' own checks (parse_plan: core/input_ranges.h, plan_validate) before it is written, so a
// command never writes a plan that `simulate` or `run` refuse. Leaves out the plan's contents.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/output_file.h"
#include "core/plan.h"

namespace fsdpx {

inline void write_plan_file(const std::string& path, const Plan& plan) {
  const nlohmann::json j = plan_to_json(plan);
  (void)parse_plan(j, path);  // throws ConfigError "<path>: <json path>: ..." for what a reader would refuse
  write_output_file(path, j.dump(2) + "\n");
}

}  // namespace fsdpx
