// core/errors.h — the two kinds of failure in fsdpx: broken programmer invariants (FSDP_CHECK,
// abort with file:line) and invalid user input (ConfigError, caught once in main: one line, exit 2).
// No library code calls exit(); CUDA/NCCL checks live in the executor.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#define FSDP_CHECK(cond, msg)                                                          \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__, __LINE__, #cond, \
                   std::string(msg).c_str());                                          \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace fsdpx {

// Invalid user input: a config file, a plan or a command-line value. The message is complete and
// fits on one line: "<file>: <json path>: <what was expected>".
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace fsdpx
