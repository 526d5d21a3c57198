// simulator/memory_oracle.h — fsdpx's simulated peak memory against PyTorch's own FSDP2 accounting: the
// fixtures of tools/fsdp2_memory_oracle.py (format "fsdpx-fsdp2-memory-oracle/1": FSDPMemTracker over
// the real FSDP2 code path of a torchtitan-style Llama, fake tensors, fake process group), each turned
// into the plan torchtitan would run and simulated. Compares allocated bytes only: the tracker sees
// tensors, not the caching allocator's reserve, the CUDA context or NCCL's buffers.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/plan.h"
#include "program/step_program.h"

namespace fsdpx {

// PyTorch's numbers for one configuration (bytes on rank 0).
struct OracleMeasurement {
  double forward_backward_peak_bytes = 0;  // from the second step's start to its gradient clipping
  double optimizer_peak_bytes = 0;         // during that step's AdamW (foreach)
  double step_start_bytes = 0;             // live at the second step's start (state and buffers)
  std::string peak_module;                 // the deepest module active at the forward/backward peak
  std::string peak_phase;                  // "forward", "backward" or "loss" (outside every module)
  double peak_bytes() const {
    return forward_backward_peak_bytes > optimizer_peak_bytes ? forward_backward_peak_bytes : optimizer_peak_bytes;
  }
};

struct OracleCase {
  std::string id;
  Plan plan;  // what torchtitan runs for the configuration (simulator/case_plan.cpp's conventions)
  OracleMeasurement measured;
};

// Strict reading of a fixtures file; bad input is a ConfigError naming the file and JSON path.
std::vector<OracleCase> load_oracle_cases(const std::string& path);

struct OracleComparison {
  std::string id;
  double measured_bytes = 0;
  double predicted_bytes = 0;  // the simulated peak less the "other" category (context, NCCL, reserve)
  std::array<double, kMemCategoryCount> predicted_by_category{};  // at the simulated peak
  std::string predicted_peak_op;
  std::string measured_peak_at;  // "phase module"
  double error() const { return predicted_bytes / measured_bytes - 1; }
};

// Simulates each case and pairs the allocated peak with the tracker's.
std::vector<OracleComparison> compare_with_oracle(const std::vector<OracleCase>& cases);

}  // namespace fsdpx
