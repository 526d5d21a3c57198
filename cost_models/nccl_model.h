// cost_models/nccl_model.h — NCCL's own tuner model for all-gather, reduce-scatter and all-reduce:
// latency and bandwidth of each (algorithm, protocol) pair and the pick of the fastest, as in
// NVIDIA/nccl src/graph/tuning.cc (master 5067397c). Internal to communication.cpp; exposed
// so tests can force one algorithm/protocol. Leaves out CollNet, NVLSTree, PAT, channel counts
// (per-channel caps) and runtime tuner plugins.
#pragma once

#include "core/cluster_spec.h"
#include "cost_models/communication.h"

namespace fsdpx {

enum class NcclAlgo { ring, tree, nvls };
enum class NcclProto { ll, ll128, simple };

const char* nccl_algo_name(NcclAlgo a);
const char* nccl_proto_name(NcclProto p);

// Whether NCCL would consider this pair for this collective and group: Ring for all three; Tree only
// for multi-node all-reduce; NVLS only for single-node all-reduce on a cluster with NVLS, Simple only.
bool nccl_candidate(Collective c, NcclAlgo a, NcclProto p, const GroupShape& g, const ClusterSpec& cl);

// Latency term without the multi-node ring plateau factor (that one depends on the size).
// Only for all_gather, reduce_scatter, all_reduce; any algorithm/protocol may be forced.
double nccl_latency_s(Collective c, NcclAlgo a, NcclProto p, const GroupShape& g, const ClusterSpec& cl);

// Algorithm bandwidth (S / transfer time) at message size `bytes`: the protocol's bus bandwidth
// converted with nRanks/nsteps (Ring), 0.5 (Tree) or the NVLS rule.
double nccl_alg_bw_bytes_per_s(Collective c, NcclAlgo a, NcclProto p, double bytes, const GroupShape& g,
                               const ClusterSpec& cl);

// latency (× plateau factor where it applies) + bytes / algbw.
double nccl_time_s(Collective c, NcclAlgo a, NcclProto p, double bytes, const GroupShape& g,
                   const ClusterSpec& cl);

// NVLS channels on sm90 (src/transport/nvls.cc l.151-160): the CTAs an NVLS collective runs with.
int nccl_nvls_channels();

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  double time_s = 0;
};
// The candidate with the smallest nccl_time_s, as NCCL's tuner picks it (ties keep the first in
// Ring, Tree, NVLS × LL, LL128, Simple order).
NcclChoice nccl_best(Collective c, double bytes, const GroupShape& g, const ClusterSpec& cl);

}  // namespace fsdpx
