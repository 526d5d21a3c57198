// cost_models/communication.h — time of collectives of S bytes over n ranks on a two-level fabric
// (NVLink inside a node, NICs across nodes): NCCL's ring/tree/NVLS latency + bandwidth model
// (NVIDIA/nccl src/graph/tuning.cc) with nccl-tests' algbw/busbw conventions (doc/PERFORMANCE.md),
// and the hierarchical decomposition used by HSDP. Leaves out protocol choice below LL128 detail,
// congestion beyond the node's NIC share, and SHARP in the network.
#pragma once

#include "core/cluster_spec.h"
#include "core/collective.h"  // Collective, collective_name, bus_bandwidth_factor

namespace fsdpx {

// How a process group lies on the cluster. Groups are symmetric: every node hosting members hosts
// `ranks_per_node` of them, and gpus_per_node / ranks_per_node such groups run side by side on a
// node, sharing its NICs.
struct GroupShape {
  int ranks = 1;
  int ranks_per_node = 1;
  int nodes() const { return (ranks + ranks_per_node - 1) / ranks_per_node; }
  // Ranks on the group's least-filled node: fewer than ranks_per_node when the job uses only part of
  // its last node (128 GPUs on 72-GPU NVL72 domains: 72 + 56).
  int fewest_ranks_per_node() const { return ranks - (nodes() - 1) * ranks_per_node; }
};

// Achievable busbw of one group on this cluster: intra-node busbw inside a node; across nodes the
// ring rule min(NVLink busbw, NICs per node · per-NIC bytes/s · share of the node's NICs).
double group_bus_bw_bytes_per_s(const GroupShape& g, const ClusterSpec& c);

// Latency term of the best NCCL algorithm for this collective and group (ring steps, or tree /
// NVLS where NCCL would pick them).
double collective_latency_s(Collective c, const GroupShape& g, const ClusterSpec& c2);

// Total time of one collective. `bytes` is S in nccl-tests' convention: the whole array (the
// all-gather output, the reduce-scatter input, the all-reduce buffer, the broadcast buffer, the
// bytes one rank sends for send/recv, the full all-to-all buffer of one rank).
double collective_time_s(Collective c, double bytes, const GroupShape& g, const ClusterSpec& cluster);

// CTAs NCCL's kernel for this collective runs with (one per channel; each holds an SM for the whole
// collective): NVLS all-reduce 16 on Hopper (src/transport/nvls.cc); rings inside a node the cluster's
// intra-node channel count; rings across nodes two channels per NIC of the node: the ring search's one
// ring per NIC, not duplicated by the search below 25 GB/s per channel, nor below 50 GB/s with more
// than 4 channels on sm90 (src/graph/search.cc, ncclTopoDupChannels), then doubled for every graph by
// ncclTopoPostset ("Duplication should be complete now": nChannels * 2, src/graph/connect.cc), at most
// the intra-node count; on the host-threads cluster none. Leaves out NCCL's channel reduction for
// small messages.
int collective_channels(Collective c, double bytes, const GroupShape& g, const ClusterSpec& cluster);

// HSDP gradient reduction: reduce-scatter of `bytes` inside the shard group, then all-reduce of the
// bytes/shard_ranks shard across the replica group (ml-engineering network/README.md, model 3).
double hsdp_gradient_reduce_time_s(double bytes, const GroupShape& shard, const GroupShape& replica,
                                   const ClusterSpec& cluster);

}  // namespace fsdpx
