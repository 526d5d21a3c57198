// simulator/step_after_probe.h — a pipelined step simulated whole after a probe of it that found no
// recurring window (issue 36): its engine run resumed from the probe's (engine_resume.h), so the part of
// the step the probe already ran is not run again. The same Simulation simulate() gives, to the bit.
// Leaves out plans without a probe (it then is simulate()).
#pragma once

#include "simulator/periodic_probe.h"
#include "simulator/simulate.h"

namespace fsdpx {

// simulate(plan, options), its engine run resumed from `probe`'s where `probe` holds a run with snapshots
// (UnrepeatedProbe::micro_batches > 0); `info` (where given) says from where.
Simulation simulate_after_probe(const Plan& plan, const EngineOptions& options, const UnrepeatedProbe& probe,
                                ResumeInfo* info = nullptr);

}  // namespace fsdpx
