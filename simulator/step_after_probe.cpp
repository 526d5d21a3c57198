// simulator/step_after_probe.cpp — step_after_probe.h: lower and time the step as simulate() does, run it
// resumed from the probe's run, summarise.
#include "simulator/step_after_probe.h"

#include "program/lower.h"
#include "simulator/op_timing.h"

namespace fsdpx {

Simulation simulate_after_probe(const Plan& plan, const EngineOptions& options, const UnrepeatedProbe& probe,
                                ResumeInfo* info) {
  if (probe.micro_batches == 0 || !probe.snapshots.run) return simulate(plan, options);
  StepProgram program = lower(plan, LowerOptions{.op_names = options.op_names});
  time_program(program, plan);
  EngineResult engine = run_engine_resumed(program, options, probe.program, probe.engine, probe.snapshots, info);
  return summarise(std::move(program), std::move(engine));
}

}  // namespace fsdpx
