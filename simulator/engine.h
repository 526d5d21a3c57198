// simulator/engine.h — the discrete-event engine: runs a timed step program in integer-nanosecond
// virtual time with a deterministic (time, sequence) order. Streams are resources that run their ops
// in order; an op starts when it heads its stream and its dependencies are done; a collective starts
// when every participant has reached it, and ops of different roles that form a rendezvous (a pipeline
// send and its receive, an all-reduce across pipeline ranks) start when each has reached its stream's
// head, like a collective whose members are those roles; collectives on the same fabric of a rank share
// its bandwidth (the bandwidth part of their time; latency is not shared); compute slows by the share of
// SMs the resident collective kernels hold (interference). Memory effects of ops give each rank's live
// bytes by category and the peak. Leaves out stream priorities and launch overheads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "program/step_program.h"

namespace fsdpx {

using TimeNs = std::int64_t;

struct EngineOptions {
  bool overlap = true;             // false: every op of a rank waits for the previous one in issue order
                                   // (except pipeline sends, which are asynchronous)
  bool infinite_bandwidth = false; // collectives and TP/CP traffic take no time
  bool expand_ranks = false;       // simulate every rank instead of one per role
  // Compute runs on the SMs that running collectives leave free: at (1 - sum of their Op::sm_share)
  // while their kernels are resident (latency and bandwidth phases). false: compute ignores them.
  bool interference = true;
  bool record_ops = true;          // keep per-op start/end times (trace, summaries)
  // Not read by the engine: the functions that lower a plan and then run it (simulate.h simulate, the
  // periodic probes) lower with op names (program/lower.h LowerOptions); steady_state.h's totals turn
  // them off.
  bool op_names = true;
};

struct OpTiming {
  int role = 0;
  int rank = 0;  // instance index within the role (0 under symmetry)
  int op = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
};

struct MemoryPeak {
  double total_bytes = 0;
  std::array<double, kMemCategoryCount> by_category{};
  int op = -1;  // the op whose allocation reached the peak (-1: resident state)
  TimeNs at_ns = 0;
};

// A sample of one rank's live memory, taken at every change (for the trace's counter track).
struct MemorySample {
  int role = 0;
  int rank = 0;
  TimeNs at_ns = 0;
  std::array<double, kMemCategoryCount> by_category{};
};

struct EngineResult {
  TimeNs step_time_ns = 0;
  std::vector<OpTiming> ops;                 // in completion order (ties by op id)
  std::vector<MemoryPeak> peak_by_role;      // worst rank of each role
  std::vector<MemorySample> memory_samples;  // only when record_ops
  // Per role (worst rank): time the compute stream is busy, by op kind.
  std::vector<std::array<TimeNs, kOpKindCount>> compute_busy_ns_by_kind;
  std::vector<TimeNs> compute_busy_ns;       // per role
};

EngineResult run_engine(const StepProgram& program, const EngineOptions& options);

}  // namespace fsdpx
