// tests/support/ep_parallelism.h — a Parallelism with the degrees the expert-parallel tests vary
// (dp_shard, ep, tp, cp), the rest at their defaults. Leaves out pipeline and replica degrees.
#pragma once

#include "core/plan_settings.h"

namespace fsdpx::test {

inline Parallelism ep_parallelism(int dp_shard, int ep, int tp = 1, int cp = 1) {
  Parallelism p;
  p.dp_shard = dp_shard;
  p.ep = ep;
  p.tp = tp;
  p.cp = cp;
  return p;
}

}  // namespace fsdpx::test
