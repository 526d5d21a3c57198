// executor/cuda/gemm_algo_choice.h — how the CUDA backend picks a cuBLASLt algorithm per GEMM shape, as
// pure host functions (tested without a GPU: tests/executor/test_gemm_algo_choice.cpp). FSDPX_GEMM_ALGO
// selects the mode: `heuristic` (the default) runs cuBLASLt's first answer; `search` asks the heuristic for
// its top kGemmSearchCandidates and times each once on the shape's first call (gemm_algo_search.cpp), as
// NVIDIA's cuBLASLt autotuning sample does (CUDALibrarySamples cuBLASLt/LtSgemmSimpleAutoTuning) and PyTorch's
// TunableOp for cuBLASLt (pytorch/pytorch#133896). Issue 29: llama3.2-1b's qkv forward GEMM ran 4x slower than
// its dx and dW GEMMs of the same FLOPs under the heuristic's first algorithm. Leaves out the timing itself
// and persisting choices between runs.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"

namespace fsdpx::cuda {

enum class GemmAlgoMode { heuristic, search };

inline constexpr const char* kGemmAlgoEnv = "FSDPX_GEMM_ALGO";
inline constexpr int kGemmSearchCandidates = 8;

// The mode FSDPX_GEMM_ALGO names; unset or empty: heuristic. Anything else is a ConfigError naming the variable.
inline GemmAlgoMode parse_gemm_algo_mode(const char* value) {
  const std::string_view v = value ? value : "";
  if (v.empty() || v == "heuristic") return GemmAlgoMode::heuristic;
  if (v == "search") return GemmAlgoMode::search;
  throw ConfigError(std::string(kGemmAlgoEnv) + "=" + std::string(v) + ": expected heuristic or search");
}

// One candidate's trial: whether it ran (cuBLASLt accepted it and its events completed) and its time.
struct GemmCandidateTrial {
  bool ran = false;
  float time_ms = 0.0f;
};

// The candidate to keep: the fastest that ran with a finite, non-negative time; on equal times the one the
// heuristic ranked first (the lower index), so equal timings choose alike on every run; the heuristic's
// first (index 0) when none ran.
inline std::size_t pick_gemm_candidate(const std::vector<GemmCandidateTrial>& trials) {
  std::size_t best = 0;
  bool found = false;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const GemmCandidateTrial& t = trials[i];
    if (!t.ran || !std::isfinite(t.time_ms) || t.time_ms < 0.0f) continue;
    if (!found || t.time_ms < trials[best].time_ms) best = i, found = true;
  }
  return best;
}

}  // namespace fsdpx::cuda
