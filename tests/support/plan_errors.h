// tests/support/plan_errors.h — what parse_plan says about an edited plan: its ConfigError message ("" when
// it loads), and a check that the message names the file and JSON path, says `what`, and is one line.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/plan.h"

namespace fsdpx::test {

inline std::string plan_error_of(const nlohmann::json& j) {
  try {
    parse_plan(j, "edited.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

inline void check_plan_error(const nlohmann::json& j, const std::string& path, const std::string& what) {
  const std::string msg = plan_error_of(j);
  INFO("message: " << msg);
  CHECK(msg.find("edited.json: " + path + ":") != std::string::npos);
  CHECK(msg.find(what) != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
}

}  // namespace fsdpx::test
