// tests/simulator/synthetic_program.h — an FSDP-shaped step program built without the lowering, for
// the engine's tests and benchmark: per micro-batch, per unit an all-gather and a forward that needs it
// (prefetch of one unit: the all-gather of unit u waits for the reshard of unit u-2), then in reverse a
// backward all-gather, the backward and a reshard; reduce-scatters (and, for HSDP, all-reduces across
// replicas) on the last micro-batch; then the optimizer. Durations are plausible, not modelled.
#pragma once

#include "tests/simulator/program_builder.h"

namespace fsdpx::test {

struct SyntheticShape {
  int units = 4;
  int micro_batches = 2;
  bool hsdp = false;        // all-reduce of each gradient shard across dp_replicate (group 1)
  bool reshard_ag = false;  // backward all-gathers on a reshard group (group 2) instead of dp_shard
};

inline void add_memory(Op& op, MemCategory c, double alloc_bytes, double free_bytes) {
  if (alloc_bytes > 0) op.alloc_at_start.push_back({c, alloc_bytes});
  if (free_bytes > 0) op.free_at_end.push_back({c, free_bytes});
}

// Forward of one micro-batch; returns the last forward op.
inline int synthetic_forward(ProgramBuilder& b, const SyntheticShape& s, int mb, int prev) {
  std::vector<int> reshard(s.units, -1);
  for (int u = 0; u < s.units; ++u) {
    const std::string tag = ".u" + std::to_string(u) + ".mb" + std::to_string(mb);
    std::vector<int> ag_deps;
    if (u >= 2) ag_deps.push_back(reshard[u - 2]);
    const int ag = b.collective("ag" + tag, OpKind::all_gather, 2.1e-3, 30e-6, false, ag_deps, 0);
    add_memory(b.op(ag), MemCategory::params, 1.7e9, 0);
    std::vector<int> fwd_deps{ag};
    if (prev >= 0) fwd_deps.push_back(prev);
    prev = b.compute("fwd" + tag, OpKind::forward, 3.0e-3, fwd_deps);
    add_memory(b.op(prev), MemCategory::activations, 0.9e9, 0);
    reshard[u] = b.free_op("reshard" + tag, StreamKind::compute, {prev});
    add_memory(b.op(reshard[u]), MemCategory::params, 0, 1.7e9);
  }
  return reshard[s.units - 1];
}

// Backward of one micro-batch in reverse unit order; returns the last op.
inline int synthetic_backward(ProgramBuilder& b, const SyntheticShape& s, int mb, int prev) {
  std::vector<int> reshard(s.units, -1);
  const bool last_mb = mb == s.micro_batches - 1;
  for (int u = s.units - 1; u >= 0; --u) {
    const std::string tag = ".u" + std::to_string(u) + ".mb" + std::to_string(mb);
    std::vector<int> ag_deps;
    if (u + 2 < s.units) ag_deps.push_back(reshard[u + 2]);
    const int ag = b.collective("agb" + tag, OpKind::all_gather, 2.1e-3, 30e-6, false, ag_deps,
                                s.reshard_ag ? 2 : 0);
    add_memory(b.op(ag), MemCategory::params, 1.7e9, 0);
    const int bwd = b.compute("bwd" + tag, OpKind::backward, 6.0e-3, {ag, prev});
    add_memory(b.op(bwd), MemCategory::grads, mb == 0 ? 0.85e9 : 0, 0);
    add_memory(b.op(bwd), MemCategory::activations, 0, 0.9e9);
    prev = reshard[u] = b.free_op("reshardb" + tag, StreamKind::compute, {bwd});
    add_memory(b.op(reshard[u]), MemCategory::params, 0, 1.7e9);
    if (!last_mb) continue;
    const int rs = b.collective("rs.u" + std::to_string(u), OpKind::reduce_scatter, 2.5e-3, 40e-6, true,
                                {bwd}, 0);
    add_memory(b.op(rs), MemCategory::transient, 0.85e9, 0.85e9);
    if (s.hsdp) b.collective("ar.u" + std::to_string(u), OpKind::all_reduce, 1.0e-3, 20e-6, true, {rs}, 1);
  }
  return prev;
}

inline StepProgram synthetic_program(const SyntheticShape& s, int role_ranks = 1) {
  ProgramBuilder b(role_ranks);
  int prev = -1;
  for (int mb = 0; mb < s.micro_batches; ++mb) prev = synthetic_forward(b, s, mb, prev);
  for (int mb = 0; mb < s.micro_batches; ++mb) prev = synthetic_backward(b, s, mb, prev);
  // The optimizer waits for the last gradient collective (streams run in order, so for all of them).
  const int last_comm = static_cast<int>(b.role().ops.size()) - 1;
  const int opt = b.compute("opt", OpKind::optimizer, 1.5e-3, {prev, last_comm});
  add_memory(b.op(opt), MemCategory::transient, 0.2e9, 0.2e9);
  b.role().resident = {{MemCategory::params, 0.9e9}, {MemCategory::optimizer, 7.0e9}};
  ProcessGroup dp_shard{GroupKind::dp_shard, GroupShape{role_ranks, role_ranks}, 0};
  b.program().groups = {dp_shard, dp_shard, dp_shard};
  return b.program();
}

}  // namespace fsdpx::test
