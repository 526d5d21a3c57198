// core/cluster_spec.h — a GPU cluster: the GPU (by name, with optional overrides), GPUs per node, node
// count, the intra-node fabric (NVLink/NVSwitch bus bandwidth, latency, NVLS) and the inter-node fabric
// (NICs per node, bytes/s per NIC, latency). `cpu` is this host with ranks as threads. A job may use
// part of its last node (`gpus`: 128 GPUs on two 72-GPU NVL72 domains). Leaves out rail topology,
// oversubscribed spines and heterogeneous nodes.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/gpu_spec.h"

namespace fsdpx {

// The most ranks fsdpx plans or simulates (2^20, about ten times the largest GPU clusters built so far):
// a bound that keeps rank counts far from int overflow, not a hardware limit.
inline constexpr int kMaxWorldSize = 1 << 20;

struct IntraNodeFabric {
  double bus_bw_bytes_per_s = 0;  // achievable ring busbw inside a node (nccl-tests convention)
  double latency_s = 0;           // per ring step
  bool nvls = false;              // NVLink SHARP available
  // Channels (one CTA each, so one SM each while the kernel runs) of NCCL's ring collectives inside a
  // node: 24 on NVSwitch DGX A100 and H100 (nccl-tests #100 "Channel 23/24"; nccl #1367: 12 rings,
  // duplicated to 24, on 8xH100 with NCCL 2.19).
  int nccl_channels = 24;
};

struct InterNodeFabric {
  int nics_per_node = 0;
  double nic_bw_bytes_per_s = 0;  // achievable, one direction, per NIC
  double latency_s = 0;           // per ring step across nodes
};

struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  int gpus_per_node = 0;
  int nodes = 1;
  int gpus = 0;  // GPUs the job uses when its last node is only partly used; 0: all nodes x gpus_per_node
  IntraNodeFabric intra;
  InterNodeFabric inter;
  bool host_threads = false;  // the `cpu` cluster: ranks are threads of one process

  int world_size() const { return gpus > 0 ? gpus : gpus_per_node * nodes; }
};

// `resolve_gpu` maps a GPU name to its spec (normally from configs/gpus).
using GpuResolver = GpuSpec (*)(const std::string& name);
ClusterSpec parse_cluster_spec(const nlohmann::json& j, const std::string& file, GpuResolver resolve_gpu);
nlohmann::json cluster_spec_to_json(const ClusterSpec& c);

}  // namespace fsdpx
