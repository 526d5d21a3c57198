// tests/support/config_error.h — the message of the ConfigError that a call throws, for tests that pin
// the one-line "<file>: <json path>: <what>" format of bad input. Leaves out other exception types:
// they propagate and fail the test.
#pragma once

#include <string>

#include "core/errors.h"

namespace fsdpx::test {

// e.what() of the ConfigError `fn()` throws, or "(no error)".
template <class Fn>
std::string config_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace fsdpx::test
