// planner/pipeline_path.cpp — pipeline_path_s (pipeline_path.h).
#include "planner/pipeline_path.h"

#include <algorithm>

#include "core/pipeline.h"

namespace fsdpx {

double pipeline_path_s(const Plan& p, const StagePasses& s) {
  const Parallelism& par = p.parallelism;
  const double m = double(p.grad_accum());
  const bool way_back = par.pp_schedule != PipelineSchedule::zero_bubble;
  double most = 0, before_f = 0, before_b = 0;
  for (int r = 0; r < par.pp; ++r) {
    double work = 0;
    for (int c = 0; c < par.vpp; ++c) {
      const auto v = std::size_t(chunk_stage(c, r, par.pp));
      work += m * (s.f[v] + s.b[v] + s.w[v]);
    }
    most = std::max(most, before_f + work + (way_back ? before_b : 0.0));
    before_f += s.f[std::size_t(r)];
    before_b += s.b[std::size_t(r)];
  }
  return most;
}

}  // namespace fsdpx
