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

// Share of each fabric a collective of group g uses alone (communication.h's ring rule): inside a node
// all of NVLink; across nodes the ring runs at min(NVLink, NIC share) and so loads each by that rate
// over its capacity. A group with one rank per node sends straight to its NIC.
void set_fabric_loads(Op& op, const GroupShape& g, const ClusterSpec& cluster) {
  op.nvlink_load = 1;
  op.nic_load = 0;
  if (g.nodes() == 1) return;
  const double ring_bw = group_bus_bw_bytes_per_s(g, cluster);
  const double nic_bw = cluster.inter.nics_per_node * cluster.inter.nic_bw_bytes_per_s / cluster.gpus_per_node *
                        g.ranks_per_node;
  op.nvlink_load = g.ranks_per_node > 1 ? std::min(1.0, ring_bw / cluster.intra.bus_bw_bytes_per_s) : 0.0;
  op.nic_load = std::min(1.0, ring_bw / nic_bw);
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
        set_fabric_loads(op, g, cluster);
        const int sms = cluster.gpu.sm_count;
        op.sm_share = sms > 0 ? std::min(1.0, collective_channels(op.collective, op.comm_bytes, g, cluster) / double(sms)) : 0.0;
      }
    }
  }
}

}  // namespace fsdpx
