// simulator/engine_resume.h — a run of a step program resumed from a run of another that opens with the
// same ops (issue 36): a pipelined probe of k micro-batches that found no recurring window, and the whole
// step of m micro-batches simulated after it. Each role's ops are emitted in schedule order and the
// schedule of k micro-batches is that of m up to the probe's cool-down (program/pipeline_schedule.cpp), so
// the step's run repeats the probe's up to the first time an op the two programs do not share could start
// (shared_prefix.h). The probe's run keeps snapshots of its state between events; the step's run starts
// from the latest one before that time, with the probe's records and memory samples up to it, and gives
// the result run_engine gives, record for record. Leaves out expanded ranks and runs without overlap
// (those run whole).
#pragma once

#include <memory>

#include "simulator/engine.h"

namespace fsdpx {

namespace engine_detail {
struct RunSnapshots;
}

// A run's snapshots (every few events) and its engine data, for run_engine_resumed.
struct EngineSnapshots {
  std::shared_ptr<const engine_detail::RunSnapshots> run;
  EngineOptions options;  // of the run
};

// Snapshots a run keeps, about (one every events / kSnapshotsPerRun event times): a resumed run starts at
// most about 1 / kSnapshotsPerRun of the earlier run before the time the two can first differ.
inline constexpr std::size_t kSnapshotsPerRun = 128;

// run_engine, keeping about `snapshots_per_run` snapshots in `out` (ops / snapshots_per_run events apart,
// at least one).
EngineResult run_engine_keeping_snapshots(const StepProgram& program, const EngineOptions& options,
                                          EngineSnapshots& out, std::size_t snapshots_per_run = kSnapshotsPerRun);

struct ResumeInfo {
  TimeNs shared_until_ns = 0;  // before it the two runs start the same ops at the same times
  TimeNs resumed_at_ns = -1;   // the snapshot's time; -1: run from the start
  std::size_t records_reused = 0;  // the earlier run's records taken up to the snapshot
};

// What run_engine(program, options) gives, resumed from `snapshots` of `earlier` (a run of
// `earlier_program`, with per-op records) where the two programs open alike; from the start otherwise.
// `keep`, where given, gets this run's snapshots (a later run may resume from it in turn: the earlier
// run's before the resumed one's start, then its own).
EngineResult run_engine_resumed(const StepProgram& program, const EngineOptions& options,
                                const StepProgram& earlier_program, const EngineResult& earlier,
                                const EngineSnapshots& snapshots, ResumeInfo* info = nullptr,
                                EngineSnapshots* keep = nullptr);

}  // namespace fsdpx
