// simulator/op_timing.cpp — op durations from the cost models.
#include "simulator/op_timing.h"

#include <algorithm>

#include "cost_models/communication.h"
#include "cost_models/compute.h"

namespace fsdpx {

namespace {

double serial_comm_s(const WorkSet& w, const StepProgram& p, const ClusterSpec& c) {
  double t = 0;
  for (const auto& sc : w.serial_comms)
    t += sc.count * collective_time_s(sc.kind, sc.bytes, p.groups[std::size_t(sc.group)].shape, c);
  return t;
}

}  // namespace

void time_program(StepProgram& program, const ClusterSpec& cluster, DType compute_dtype) {
  std::vector<double> kernel_s(program.work_sets.size()), comm_s(program.work_sets.size());
  for (std::size_t i = 0; i < program.work_sets.size(); ++i) {
    kernel_s[i] = kernels_time_s(program.work_sets[i].kernels, cluster.gpu, compute_dtype);
    comm_s[i] = serial_comm_s(program.work_sets[i], program, cluster);
  }
  for (auto& role : program.roles) {
    for (auto& op : role.ops) {
      if (op.work_set >= 0) {
        op.serial_comm_time_s = comm_s[std::size_t(op.work_set)];
        op.duration_s = kernel_s[std::size_t(op.work_set)] + op.serial_comm_time_s;
      } else if (op.group >= 0) {
        const GroupShape& g = program.groups[std::size_t(op.group)].shape;
        op.duration_s = collective_time_s(op.collective, op.comm_bytes, g, cluster);
        op.latency_s = std::min(op.duration_s, op.comm_bytes > 0 && g.ranks > 1
                                                   ? collective_latency_s(op.collective, g, cluster) : 0.0);
        // NIC-bound when the group spans nodes and the NIC share is below NVLink (communication.h).
        op.inter_node = g.nodes() > 1 && group_bus_bw_bytes_per_s(g, cluster) < cluster.intra.bus_bw_bytes_per_s;
        const int sms = cluster.gpu.sm_count;
        op.sm_share = sms > 0 ? std::min(1.0, collective_channels(op.collective, op.comm_bytes, g, cluster) / double(sms)) : 0.0;
      }
    }
  }
}

}  // namespace fsdpx
