// tests/executor/test_gemm_algo_choice.cpp — the CUDA backend's GEMM algorithm choice without a GPU
// (executor/cuda/gemm_algo_choice.h): FSDPX_GEMM_ALGO's values, and which timed candidate is kept (the
// fastest that ran; the heuristic's order on equal times; the heuristic's first when none ran).
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "executor/cuda/gemm_algo_choice.h"

namespace fsdpx::cuda {
namespace {

TEST_CASE("gemm algo: FSDPX_GEMM_ALGO selects the heuristic (default) or the search, anything else is refused") {
  CHECK(parse_gemm_algo_mode(nullptr) == GemmAlgoMode::heuristic);
  CHECK(parse_gemm_algo_mode("") == GemmAlgoMode::heuristic);
  CHECK(parse_gemm_algo_mode("heuristic") == GemmAlgoMode::heuristic);
  CHECK(parse_gemm_algo_mode("search") == GemmAlgoMode::search);
  for (const char* bad : {"Search", "fastest", "search "}) {
    CAPTURE(bad);
    try {
      parse_gemm_algo_mode(bad);
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()) == std::string("FSDPX_GEMM_ALGO=") + bad + ": expected heuristic or search");
    }
  }
}

TEST_CASE("gemm algo: the fastest candidate that ran is kept") {
  CHECK(pick_gemm_candidate({{true, 0.67f}, {true, 0.30f}, {true, 0.16f}, {true, 0.18f}}) == 2);
  CHECK(pick_gemm_candidate({{true, 0.10f}, {true, 0.30f}}) == 0);  // the heuristic's first can win
  // a faster time from a candidate that did not run (cuBLASLt refused it) does not count
  CHECK(pick_gemm_candidate({{true, 0.67f}, {false, 0.01f}, {true, 0.50f}}) == 2);
  // nor a time that is not a time
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  CHECK(pick_gemm_candidate({{true, 0.67f}, {true, nan}, {true, -1.0f}, {true, inf}, {true, 0.60f}}) == 4);
}

TEST_CASE("gemm algo: equal times keep the heuristic's order; nothing that ran keeps its first") {
  CHECK(pick_gemm_candidate({{true, 0.5f}, {true, 0.2f}, {true, 0.2f}}) == 1);
  CHECK(pick_gemm_candidate({{false, 0.0f}, {true, 0.2f}, {true, 0.2f}}) == 1);
  CHECK(pick_gemm_candidate({{true, 0.2f}, {true, 0.2f}}) == 0);
  CHECK(pick_gemm_candidate({{false, 0.0f}, {false, 0.0f}}) == 0);
  CHECK(pick_gemm_candidate({}) == 0);
  // the same trials give the same choice every time
  const std::vector<GemmCandidateTrial> t{{true, 0.31f}, {true, 0.29f}, {false, 0.1f}, {true, 0.29f}};
  for (int i = 0; i < 3; ++i) CHECK(pick_gemm_candidate(t) == 1);
}

}  // namespace
}  // namespace fsdpx::cuda
