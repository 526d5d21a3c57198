// simulator/pipeline_window.h — one pipelined probe's timeline (rank 0 of every role) and the check that
// a window [t, t + P) of it recurs P later as the ops d micro-batches on, with the same live memory
// (steady_state_pipeline.cpp looks windows up with it). Issue 36, branch deep18: the check first compares
// the ends of the ops in (t, t + P) and (t + P, t + 2P) on every role, which needs no op identities, and
// builds the identity tables (op_shift.h) only for a window that passes; then it reads only the ops that
// can lie in the two windows (each role's ops in end order and its longest op bound them). Before, every
// probe built the tables and every window tried scanned every op. Leaves out which windows are tried and
// what the extrapolation does with one (steady_state_pipeline.cpp).
#pragma once

#include <optional>
#include <vector>

#include "program/step_program.h"
#include "simulator/engine.h"
#include "simulator/op_shift.h"

namespace fsdpx {

// A probe's timeline (rank 0), built once, and its ops' identities, built when a window is checked in full;
// `shift` is for the span d (set_span), built with them.
struct PipelineProbe {
  const StepProgram& program;
  const EngineResult& engine;
  int d = 1;
  std::vector<OpShiftTable> tables;                         // per role (empty until needed)
  std::vector<std::vector<int>> shift;                      // per role, for span d (empty until needed)
  std::vector<std::vector<TimeNs>> start, end;              // per role, per op (instance 0)
  std::vector<std::vector<int>> by_end;                     // per role: op ids in end order (the records')
  std::vector<TimeNs> longest_ns;                           // per role: the longest op's duration
  std::vector<std::vector<const MemorySample*>> samples;    // per role (instance 0), in time order
};

// `engine` must hold per-op records and memory samples (EngineOptions::record_ops).
PipelineProbe make_pipeline_probe(const StepProgram& program, const EngineResult& engine);
// The span the windows are checked for (its shift is built on first use).
void set_span(PipelineProbe& probe, int d);
// The identity tables and the shift for the probe's span, where not built yet.
void build_shift(PipelineProbe& probe);

// A necessary condition for a window, from times alone: on every role, the ends of the ops ending in
// (t, t + P), each P later, are the ends of those ending in (t + P, t + 2P). (An op ending in (t, t + P)
// lies in the window, so its shift ends in (t + P, t + 2P); an op ending there lies in the next window,
// whose ops are the window's shifts, one to one: pipeline_window.cpp.)
bool ends_recur(const PipelineProbe& probe, TimeNs t, TimeNs period);

// Op b of `role` is op a d micro-batches later (d: the probe's span; build_shift first): same work and effects, dependencies and
// rendezvous partners shifted too (ops of no micro-batch, such as a step's first all-gather, stay themselves).
bool same_shifted_op(const PipelineProbe& probe, int role, int a, int b);

// One period of the step: what each role does in it.
struct Window {
  TimeNs start_ns = 0, period_ns = 0;
  std::vector<int> ops;               // per role: ops starting in the window
  std::vector<TimeNs> busy_ns;        // per role: compute-stream time of those ops (program order)
  std::vector<double> floor_s;        // per role: their compute-stream durations at full rate, summed in program order
};

// The window [t, t + period) when, on every role, its ops (those starting in it or running at its start)
// recur exactly `period` later as their shifts, nothing else runs then, and live memory recurs too (builds
// the shift where ends_recur holds).
std::optional<Window> check_window(PipelineProbe& probe, TimeNs t, TimeNs period);

}  // namespace fsdpx
