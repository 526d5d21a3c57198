// tests/simulator/program_builder.h — builds small step programs by hand for the engine and trace
// tests: one role, ops appended in issue order and listed on their stream in the same order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "program/step_program.h"

namespace fsdpx::test {

class ProgramBuilder {
 public:
  explicit ProgramBuilder(int role_ranks = 1) {
    program_.roles.resize(1);
    program_.roles[0].role_ranks = role_ranks;
    program_.roles[0].streams.resize(kStreamCount);
    program_.mesh.dp_shard = role_ranks;
    program_.world_size = role_ranks;
    // One work set shared by every compute op: a 1 TFLOP matmul (the trace reports it).
    WorkSet work;
    work.kernels.push_back(KernelWork{"gemm", 1e12, 0, true});
    program_.work_sets.push_back(work);
  }

  // A compute op (forward/backward/optimizer) on the compute stream.
  int compute(std::string name, OpKind kind, double duration_s, std::vector<int> deps = {}) {
    Op op;
    op.kind = kind;
    op.stream = StreamKind::compute;
    op.duration_s = duration_s;
    op.work_set = 0;
    return add(std::move(name), std::move(op), std::move(deps));
  }

  // A collective; its stream follows its kind.
  int collective(std::string name, OpKind kind, double duration_s, double latency_s, bool inter_node,
                 std::vector<int> deps = {}, int group = 0, double sm_share = 0) {
    Op op;
    op.kind = kind;
    op.stream = kind == OpKind::all_gather       ? StreamKind::all_gather
                : kind == OpKind::reduce_scatter ? StreamKind::reduce_scatter
                                                 : StreamKind::all_reduce;
    op.duration_s = duration_s;
    op.latency_s = latency_s;
    op.nvlink_load = inter_node ? 0 : 1;
    op.nic_load = inter_node ? 1 : 0;
    op.sm_share = sm_share;
    op.comm_bytes = 1 << 20;
    op.group = group;
    return add(std::move(name), std::move(op), std::move(deps));
  }

  int free_op(std::string name, StreamKind stream, std::vector<int> deps = {}) {
    Op op;
    op.kind = OpKind::free;
    op.stream = stream;
    op.duration_s = 1.0;  // ignored: free ops take no time
    return add(std::move(name), std::move(op), std::move(deps));
  }

  Op& op(int id) { return program_.roles[0].ops[id]; }
  RoleProgram& role() { return program_.roles[0]; }
  StepProgram& program() { return program_; }

 private:
  int add(std::string name, Op op, std::vector<int> deps) {
    RoleProgram& role = program_.roles[0];
    const int id = static_cast<int>(role.ops.size());
    op.name = std::move(name);
    op.deps = std::move(deps);
    role.streams[static_cast<int>(op.stream)].push_back(id);
    role.ops.push_back(std::move(op));
    return id;
  }

  StepProgram program_;
};

}  // namespace fsdpx::test
