// tools/run_trace.cpp — fsdpx run's trace options (see run_trace.h).
#include "tools/run_trace.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/output_file.h"
#include "tools/measured_trace.h"

namespace fsdpx {

void check_run_trace_options(const RunTraceOptions& o, const Plan& plan, bool multi_process) {
  if (o.file.empty()) {
    if (!o.ranks.empty() || o.steps > 0)
      throw ConfigError(fmt::format("{} needs --trace FILE", o.ranks.empty() ? "--trace-steps" : "--trace-ranks"));
    return;
  }
  const int world = plan.parallelism.world_size();
  for (int r : o.ranks) {
    if (r < 0 || r >= world)
      throw ConfigError(fmt::format("--trace-ranks: rank {} is not a rank of the plan (0..{})", r, world - 1));
    if (multi_process && r != 0)
      throw ConfigError(fmt::format("--trace-ranks: rank {} runs in another process (one process per rank): a trace "
                                    "holds the ranks of rank 0's process; run the ranks as threads to trace them all",
                                    r));
  }
  check_output_writable(o.file);
}

void write_run_trace(const RunTraceOptions& o, const Trainer& trainer, const std::string& backend,
                     const std::string& plan_file) {
  std::vector<RankTimeline> ranks = trainer.timelines();
  if (!o.ranks.empty())
    std::erase_if(ranks, [&](const RankTimeline& r) { return std::find(o.ranks.begin(), o.ranks.end(), r.rank) == o.ranks.end(); });
  write_output_file(o.file, measured_trace_json(trainer.program().program, ranks, MeasuredTraceInfo{backend, plan_file}));
}

}  // namespace fsdpx
