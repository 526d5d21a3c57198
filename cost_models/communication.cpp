// cost_models/communication.cpp — collective times on a two-level fabric. All-gather,
// reduce-scatter and all-reduce go through NCCL's tuner model (nccl_model.cpp); broadcast, send/recv
// and all-to-all use one-hop latencies and their bytes over the bottleneck link. Leaves out
// congestion between different groups beyond the even NIC share, and SHARP in the network.
#include "cost_models/communication.h"

#include <algorithm>

#include "core/errors.h"
#include "cost_models/nccl_model.h"

namespace fsdpx {
namespace {

// Ring/Simple base latency (µs) of NCCL's tuning.cc, used as the launch cost of the collectives the
// tuner does not model (broadcast, send/recv, all-to-all) — an assumption: tuning.cc has no model of them.
constexpr double kSimpleBaseLatencyS = 8.4e-6;

void check_shape(const GroupShape& g, const ClusterSpec& cl) {
  FSDP_CHECK(g.ranks >= 1 && g.ranks_per_node >= 1 && g.ranks_per_node <= g.ranks,
             "group shape needs 1 <= ranks_per_node <= ranks");
  FSDP_CHECK(cl.gpus_per_node <= 0 || g.ranks_per_node <= cl.gpus_per_node,
             "a group cannot have more ranks on a node than the node has GPUs");
}

// One hop: NVLink inside a node, the network across nodes.
double hop_latency_s(const GroupShape& g, const ClusterSpec& cl) {
  return g.nodes() > 1 ? cl.inter.latency_s : cl.intra.latency_s;
}

// The node's NIC bandwidth divided evenly among its GPUs.
double nic_bw_per_gpu(const ClusterSpec& cl) {
  FSDP_CHECK(cl.gpus_per_node > 0, "cluster has no GPUs per node");
  return cl.inter.nics_per_node * cl.inter.nic_bw_bytes_per_s / cl.gpus_per_node;
}

// Broadcast and send/recv: a pipelined chain, busbw factor 1 (nccl-tests PERFORMANCE.md), so
// t = latency + S/B.
double chain_time_s(double bytes, const GroupShape& g, const ClusterSpec& cl) {
  const double bw = group_bus_bw_bytes_per_s(g, cl);
  FSDP_CHECK(bw > 0, "cluster bandwidth must be positive");
  return kSimpleBaseLatencyS + hop_latency_s(g, cl) + bytes / bw;
}

// All-to-all of S bytes per rank: (rpn−1)/n·S stays on NVLink, (n−rpn)/n·S leaves the node at the
// GPU's share of the NICs. Unlike a ring, the off-node part cannot borrow NVLink to aggregate NICs,
// which is the multi-node penalty. Both parts run concurrently.
double all_to_all_time_s(double bytes, const GroupShape& g, const ClusterSpec& cl) {
  const double n = g.ranks;
  const double intra_s = bytes * (g.ranks_per_node - 1) / n / cl.intra.bus_bw_bytes_per_s;
  double inter_s = 0;
  if (g.nodes() > 1) inter_s = bytes * (n - g.ranks_per_node) / n / nic_bw_per_gpu(cl);
  return kSimpleBaseLatencyS + hop_latency_s(g, cl) + std::max(intra_s, inter_s);
}

bool tuned(Collective c) {
  return c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_reduce;
}

}  // namespace

// One node: the NVLink busbw. Several nodes: every ring leaves the node through a different NIC, so
// a ring's busbw is bounded by the node's aggregate NIC bandwidth (sjeaugey, nccl-tests #160), shared
// by the gpus_per_node / ranks_per_node groups running side by side; a partly used last node has
// fewer of them.
double group_bus_bw_bytes_per_s(const GroupShape& g, const ClusterSpec& cl) {
  check_shape(g, cl);
  if (g.nodes() == 1) return cl.intra.bus_bw_bytes_per_s;
  // A ring crosses every node's NICs, so the least-filled node bounds it.
  return std::min(cl.intra.bus_bw_bytes_per_s, nic_bw_per_gpu(cl) * g.fewest_ranks_per_node());
}

// The latency floor: the smallest latency among the algorithms NCCL would consider, i.e. the
// latency of the choice for a tiny message.
double collective_latency_s(Collective c, const GroupShape& g, const ClusterSpec& cl) {
  check_shape(g, cl);
  if (g.ranks == 1) return 0;
  if (!tuned(c)) return kSimpleBaseLatencyS + hop_latency_s(g, cl);
  double best = -1;
  for (NcclAlgo a : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls})
    for (NcclProto p : {NcclProto::ll, NcclProto::ll128, NcclProto::simple})
      if (nccl_candidate(c, a, p, g, cl)) {
        const double lat = nccl_latency_s(c, a, p, g, cl);
        if (best < 0 || lat < best) best = lat;
      }
  return best;
}

double collective_time_s(Collective c, double bytes, const GroupShape& g, const ClusterSpec& cluster) {
  check_shape(g, cluster);
  FSDP_CHECK(bytes >= 0, "negative message size");
  if (g.ranks == 1 || bytes == 0) return 0;
  switch (c) {
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_reduce: return nccl_best(c, bytes, g, cluster).time_s;
    case Collective::broadcast:
    case Collective::send_recv: return chain_time_s(bytes, g, cluster);
    case Collective::all_to_all: return all_to_all_time_s(bytes, g, cluster);
  }
  return 0;
}

int collective_channels(Collective c, double bytes, const GroupShape& g, const ClusterSpec& cluster) {
  check_shape(g, cluster);
  if (cluster.host_threads || g.ranks == 1 || bytes <= 0) return 0;
  if (tuned(c) && nccl_best(c, bytes, g, cluster).algo == NcclAlgo::nvls) return nccl_nvls_channels();
  if (g.nodes() == 1) return cluster.intra.nccl_channels;
  // The ring search finds one ring per NIC; ncclTopoPostset then doubles every graph's channels.
  return std::min(cluster.intra.nccl_channels, 2 * std::max(1, cluster.inter.nics_per_node));
}

// stas00/ml-engineering network/README.md model 3 and FSDP1's hybrid sharding (arXiv 2304.11277
// §3.2): reduce-scatter inside the
// shard group, then all-reduce of the 1/shard piece across the replica group.
double hsdp_gradient_reduce_time_s(double bytes, const GroupShape& shard, const GroupShape& replica,
                                   const ClusterSpec& cluster) {
  check_shape(shard, cluster);
  const double rs_s = collective_time_s(Collective::reduce_scatter, bytes, shard, cluster);
  const double ar_s = collective_time_s(Collective::all_reduce, bytes / shard.ranks, replica, cluster);
  return rs_s + ar_s;
}

}  // namespace fsdpx
