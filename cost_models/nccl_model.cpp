// cost_models/nccl_model.cpp — NCCL's tuner model (NVIDIA/nccl src/graph/tuning.cc; constants as
// at NVIDIA/nccl master 5067397c; tree correction table from commit b6475625)
// fed with the cluster's measured busbw and per-hop latencies. Leaves out per-channel bandwidth
// caps (we do not model channel counts), CollNet, NVLSTree, PAT and AMD-host constants.
#include "cost_models/nccl_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/errors.h"

namespace fsdpx {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGB = 1e9;

// tuning.cc baseLat (µs), rows Tree, Ring, NVLS; columns LL, LL128, Simple.
constexpr std::array<std::array<double, 3>, 3> kBaseLatUs = {{{6.8, 14, 8.4}, {6.6, 14, 8.4}, {0, 0, 0}}};
// tuning.cc hwLat (µs) for NVLink and NET, same layout. NVLS has Simple only.
constexpr std::array<std::array<double, 3>, 3> kHwLatNvlinkUs = {
    {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 25}}};
constexpr std::array<std::array<double, 3>, 3> kHwLatNetUs = {{{5.0, 8.5, 14}, {2.7, 4.0, 14}, {0, 0, 18}}};
// The cluster's intra.latency_s / inter.latency_s are the Ring/Simple per-hop hwLat; every other
// (algorithm, protocol) hwLat keeps its ratio to that entry in NCCL's table. With the defaults
// (3.4 µs NVLink, 14 µs NET) this reproduces NCCL's table exactly.
constexpr double kRefRingSimpleNvlinkUs = 3.4;
constexpr double kRefRingSimpleNetUs = 14;
// getNetOverhead: 1 µs on Intel hosts (assumed), ×3 for Simple; floors the per-step intra-node
// latency of multi-node rings.
constexpr double kNetOverheadUs = 1.0;
// LL maximum busbw (GB/s), columns 1 node, 2 nodes, >2 nodes (tuning.cc llMaxBws). Single node: row by
// GPU generation; multi-node: row by host CPU (Intel = row 0).
constexpr std::array<std::array<double, 3>, 4> kLlMaxBwGBps = {
    {{39, 39, 20.4}, {87.7, 22.5, 19}, {141, 45, 35}, {282, 90, 70}}};
// NVLS efficiency on Hopper (tuning.cc l.139-144) and NVLS channels on sm90 (transport/nvls.cc).
constexpr double kNvlsEff = 0.85;
constexpr double kNvlsChannels = 16;
// Ring channels assumed for the plateau threshold nBytes/(nChannels·nRanks) >= 64.
constexpr double kAssumedRingChannels = 16;
constexpr double kRingPlateauFactor = 1.4;  // sm80+; ncclTopoGetAlgoTime "plateau effect of ring"
// treeCorrectionFactor[proto][log2(bytes/64)], 64 B .. 256 MiB (tuning.cc @b6475625).
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

int ai(NcclAlgo a) { return a == NcclAlgo::tree ? 0 : a == NcclAlgo::ring ? 1 : 2; }
int pi(NcclProto p) { return static_cast<int>(p); }

double intra_hw_lat_s(NcclAlgo a, NcclProto p, const ClusterSpec& cl) {
  return kHwLatNvlinkUs[ai(a)][pi(p)] / kRefRingSimpleNvlinkUs * cl.intra.latency_s;
}
double inter_hw_lat_s(NcclAlgo a, NcclProto p, const ClusterSpec& cl) {
  return kHwLatNetUs[ai(a)][pi(p)] / kRefRingSimpleNetUs * cl.inter.latency_s;
}

// Row of kLlMaxBwGBps for a single node, by tensor-core generation read off the bf16 peak
// (A100 312, H100/H200/H800 989, B200 2250 TFLOPS: NVIDIA's A100, H100 and B200 datasheets). Unknown -> Volta row.
int gpu_generation_row(const GpuSpec& gpu) {
  const auto it = gpu.peak_flops_per_s.find(DType::bf16);
  const double bf16 = it == gpu.peak_flops_per_s.end() ? 0 : it->second;
  return bf16 >= 1500e12 ? 3 : bf16 >= 600e12 ? 2 : bf16 >= 200e12 ? 1 : 0;
}

double ll_max_bw_bytes_per_s(const GroupShape& g, const ClusterSpec& cl) {
  const int nodes = g.nodes();
  const int col = nodes <= 2 ? nodes - 1 : 2;
  const int row = nodes == 1 ? gpu_generation_row(cl.gpu) : 0;
  return kLlMaxBwGBps[row][col] * kGB;
}

int ring_steps(Collective c, int n) { return c == Collective::all_reduce ? 2 * (n - 1) : n - 1; }
int ring_inter_steps(Collective c, int nodes) {
  return c == Collective::all_reduce ? 2 * (nodes - 1) : nodes - 1;
}

void check_tuned(Collective c) {
  FSDP_CHECK(c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_reduce,
             "the NCCL tuner model covers all-gather, reduce-scatter and all-reduce only");
}

// base + (nsteps − nInter)·max(intra, netOverhead) + nInter·inter (tuning.cc, Ring).
double ring_latency_s(Collective c, NcclProto p, const GroupShape& g, const ClusterSpec& cl) {
  const int nodes = g.nodes();
  const int nsteps = ring_steps(c, g.ranks);
  const int ninter = ring_inter_steps(c, nodes);
  double intra = intra_hw_lat_s(NcclAlgo::ring, p, cl);
  if (nodes > 1) intra = std::max(intra, kNetOverheadUs * kUs * (p == NcclProto::simple ? 3 : 1));
  return kBaseLatUs[ai(NcclAlgo::ring)][pi(p)] * kUs + (nsteps - ninter) * intra +
         ninter * inter_hw_lat_s(NcclAlgo::ring, p, cl);
}

// base + 2·((ppn − 1)·intra + log2(nNodes)·inter) (tuning.cc, Tree all-reduce; log2i floors).
double tree_latency_s(NcclProto p, const GroupShape& g, const ClusterSpec& cl) {
  const double log2_nodes = std::floor(std::log2(static_cast<double>(g.nodes())));
  return kBaseLatUs[ai(NcclAlgo::tree)][pi(p)] * kUs +
         2 * ((g.ranks_per_node - 1) * intra_hw_lat_s(NcclAlgo::tree, p, cl) +
              log2_nodes * inter_hw_lat_s(NcclAlgo::tree, p, cl));
}

// intra (+ inter when multi-node), no base (tuning.cc, NVLS).
double nvls_latency_s(const GroupShape& g, const ClusterSpec& cl) {
  double lat = intra_hw_lat_s(NcclAlgo::nvls, NcclProto::simple, cl);
  if (g.nodes() > 1) lat += inter_hw_lat_s(NcclAlgo::nvls, NcclProto::simple, cl);
  return lat;
}

// Ring busbw per protocol: LL min(llMaxBw, 0.5·B), LL128 0.92·B (0.7·B below 2 ranks per node).
double ring_bus_bw(NcclProto p, const GroupShape& g, const ClusterSpec& cl) {
  const double bus = group_bus_bw_bytes_per_s(g, cl);
  if (p == NcclProto::ll) return std::min(ll_max_bw_bytes_per_s(g, cl), 0.5 * bus);
  if (p == NcclProto::ll128) return bus * (g.ranks_per_node < 2 ? 0.7 : 0.92);
  return bus;
}

// Tree correction, interpolated linearly in log2(bytes/64) between NCCL's power-of-two steps so that
// the time stays monotone in bytes (NCCL applies the step values).
double tree_correction(NcclProto p, double bytes) {
  const auto& row = kTreeCorrection[pi(p)];
  const double x = std::log2(std::max(bytes, 64.0) / 64.0);
  const int last = static_cast<int>(row.size()) - 1;
  if (x >= last) return 1.0;  // NCCL stops correcting beyond 256 MiB
  const int i = static_cast<int>(std::floor(x));
  return row[i] + (x - i) * (row[i + 1] - row[i]);
}

// Tree: busBw 0.92·B; LL min(/3.8, llMaxBw); LL128 ×7/9 (1 node) or ×120/128; algBw = 0.5·busBw.
double tree_alg_bw(NcclProto p, double bytes, const GroupShape& g, const ClusterSpec& cl) {
  double bus = 0.92 * group_bus_bw_bytes_per_s(g, cl);
  if (p == NcclProto::ll) bus = std::min(bus / 3.8, ll_max_bw_bytes_per_s(g, cl));
  if (p == NcclProto::ll128) bus *= g.nodes() == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
  return 0.5 * bus * tree_correction(p, bytes);
}

// NVLS all-reduce: every GPU sends S into the switch (multimem reduce) and receives S back
// (multicast), so algbw is one direction of NVLink at the ring's efficiency, times NCCL's NVLS
// efficiency and (nCh−1)/nCh. H100: 0.85·15/16·370 = 295 GB/s algbw (516 busbw) vs ~275 (~480)
// measured (nccl-tests #212).
double nvls_alg_bw(const ClusterSpec& cl) {
  return kNvlsEff * (kNvlsChannels - 1) / kNvlsChannels * cl.intra.bus_bw_bytes_per_s;
}

}  // namespace

const char* nccl_algo_name(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::ring: return "ring";
    case NcclAlgo::tree: return "tree";
    case NcclAlgo::nvls: return "nvls";
  }
  return "?";
}

const char* nccl_proto_name(NcclProto p) {
  switch (p) {
    case NcclProto::ll: return "LL";
    case NcclProto::ll128: return "LL128";
    case NcclProto::simple: return "Simple";
  }
  return "?";
}

bool nccl_candidate(Collective c, NcclAlgo a, NcclProto p, const GroupShape& g, const ClusterSpec& cl) {
  check_tuned(c);
  switch (a) {
    case NcclAlgo::ring: return true;
    case NcclAlgo::tree: return c == Collective::all_reduce && g.nodes() > 1;
    case NcclAlgo::nvls:
      return c == Collective::all_reduce && g.nodes() == 1 && cl.intra.nvls && p == NcclProto::simple;
  }
  return false;
}

double nccl_latency_s(Collective c, NcclAlgo a, NcclProto p, const GroupShape& g, const ClusterSpec& cl) {
  check_tuned(c);
  FSDP_CHECK(g.ranks >= 2, "a collective needs at least two ranks");
  switch (a) {
    case NcclAlgo::ring: return ring_latency_s(c, p, g, cl);
    case NcclAlgo::tree: return tree_latency_s(p, g, cl);
    case NcclAlgo::nvls: return nvls_latency_s(g, cl);
  }
  return 0;
}

double nccl_alg_bw_bytes_per_s(Collective c, NcclAlgo a, NcclProto p, double bytes, const GroupShape& g,
                               const ClusterSpec& cl) {
  check_tuned(c);
  FSDP_CHECK(g.ranks >= 2, "a collective needs at least two ranks");
  switch (a) {
    case NcclAlgo::ring:
      return ring_bus_bw(p, g, cl) * g.ranks / ring_steps(c, g.ranks);
    case NcclAlgo::tree: return tree_alg_bw(p, bytes, g, cl);
    case NcclAlgo::nvls: return nvls_alg_bw(cl);
  }
  return 0;
}

double nccl_time_s(Collective c, NcclAlgo a, NcclProto p, double bytes, const GroupShape& g,
                   const ClusterSpec& cl) {
  FSDP_CHECK(bytes >= 0, "negative message size");
  double lat = nccl_latency_s(c, a, p, g, cl);
  const bool plateau = a == NcclAlgo::ring && p == NcclProto::simple && c == Collective::all_reduce &&
                       g.nodes() > 1 && bytes / (kAssumedRingChannels * g.ranks) >= 64;
  if (plateau) lat *= kRingPlateauFactor;
  const double bw = nccl_alg_bw_bytes_per_s(c, a, p, bytes, g, cl);
  FSDP_CHECK(bw > 0, "collective bandwidth must be positive (check the cluster's fabric numbers)");
  return lat + bytes / bw;
}

int nccl_nvls_channels() { return static_cast<int>(kNvlsChannels); }

NcclChoice nccl_best(Collective c, double bytes, const GroupShape& g, const ClusterSpec& cl) {
  NcclChoice best;
  bool found = false;
  for (NcclAlgo a : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls}) {
    for (NcclProto p : {NcclProto::ll, NcclProto::ll128, NcclProto::simple}) {
      if (!nccl_candidate(c, a, p, g, cl)) continue;
      const double t = nccl_time_s(c, a, p, bytes, g, cl);
      if (!found || t < best.time_s) best = NcclChoice{a, p, t};
      found = true;
    }
  }
  FSDP_CHECK(found, "no NCCL algorithm applies");
  return best;
}

}  // namespace fsdpx
