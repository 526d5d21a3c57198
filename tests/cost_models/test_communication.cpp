// tests/cost_models/test_communication.cpp — the collective model against closed forms (nccl-tests
// PERFORMANCE.md ideal times and busbw), the latency floors derived from NCCL's tuning.cc constants
// (NVIDIA/nccl src/graph/tuning.cc, master 5067397c), the multi-node NIC rule, protocol choice, monotonicity and the HSDP
// decomposition. Also covers cost_models/nccl_model.cpp.
#include <cmath>
#include <string>

#include <doctest/doctest.h>

#include "cost_models/communication.h"
#include "cost_models/nccl_model.h"

namespace fsdpx {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// DGX-H100: 8 GPUs/node, NVLink busbw 370 GB/s, 3.4 µs per hop, NVLS; 8 × 48 GB/s NICs, 14 µs.
ClusterSpec dgx_h100(int nodes = 1, bool nvls = true, int nics = 8) {
  ClusterSpec c;
  c.name = "dgx-h100-test";
  c.gpu.name = "h100-test";
  c.gpu.peak_flops_per_s[DType::bf16] = 989e12;
  c.gpus_per_node = 8;
  c.nodes = nodes;
  c.intra = IntraNodeFabric{370e9, 3.4e-6, nvls};
  c.inter = InterNodeFabric{nics, 48e9, 14e-6};
  return c;
}

GroupShape shape(int ranks, int per_node) { return GroupShape{ranks, per_node}; }

// Relative difference; printed by CHECK on failure.
double rel(double got, double want) { return std::abs(got - want) / std::abs(want); }

}  // namespace

TEST_CASE("a group over a partly used last node is bounded by that node's NICs; channels per fabric") {
  ClusterSpec c = dgx_h100(2);
  c.gpus_per_node = 72;
  c.inter.nics_per_node = 72;
  c.gpus = 128;  // two NVL72-like domains, 72 + 56 GPUs
  const GroupShape g{128, 72};
  CHECK(g.nodes() == 2);
  CHECK(g.fewest_ranks_per_node() == 56);
  CHECK(group_bus_bw_bytes_per_s(g, c) == doctest::Approx(std::min(c.intra.bus_bw_bytes_per_s, 56 * 48e9)));
  // NCCL channels: the cluster's ring count inside a node; across nodes one ring per NIC, doubled by
  // ncclTopoPostset (16 for 8 NICs, as NCCL logs "16 coll channels" on two 8-GPU nodes), never more than
  // the node's own ring count; none when alone.
  const ClusterSpec one = dgx_h100(1, false);
  CHECK(collective_channels(Collective::all_gather, 1 << 30, GroupShape{8, 8}, one) == one.intra.nccl_channels);
  CHECK(collective_channels(Collective::all_gather, 1 << 30, GroupShape{16, 8}, dgx_h100(2)) == 16);
  ClusterSpec many_nics = dgx_h100(2);
  many_nics.inter.nics_per_node = 32;  // e.g. four 100G NICs per GPU: capped at the intra-node ring count
  CHECK(collective_channels(Collective::reduce_scatter, 1 << 30, GroupShape{16, 8}, many_nics) ==
        many_nics.intra.nccl_channels);
  ClusterSpec one_nic = dgx_h100(2);
  one_nic.inter.nics_per_node = 1;
  CHECK(collective_channels(Collective::all_gather, 1 << 30, GroupShape{16, 8}, one_nic) == 2);
  CHECK(collective_channels(Collective::all_gather, 1 << 30, GroupShape{1, 1}, one) == 0);
}

TEST_CASE("bus bandwidth factors follow nccl-tests PERFORMANCE.md") {
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 8) == doctest::Approx(2.0 * 7 / 8));
  CHECK(bus_bandwidth_factor(Collective::all_gather, 8) == doctest::Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(Collective::reduce_scatter, 4) == doctest::Approx(3.0 / 4));
  CHECK(bus_bandwidth_factor(Collective::all_to_all, 16) == doctest::Approx(15.0 / 16));
  CHECK(bus_bandwidth_factor(Collective::broadcast, 8) == 1.0);
  CHECK(bus_bandwidth_factor(Collective::send_recv, 2) == 1.0);
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 1) == 0.0);
}

TEST_CASE("large ring collectives approach the ideal (n-1)/n·S/B and 2(n-1)/n·S/B") {
  const double s_bytes = 8 * kGiB;
  for (int nodes : {1, 2, 4}) {
    const ClusterSpec c = dgx_h100(nodes, /*nvls=*/false);
    const GroupShape g = shape(8 * nodes, 8);
    const double n = g.ranks, b = 370e9;  // min(370, 8 × 48 = 384)
    const double ag = collective_time_s(Collective::all_gather, s_bytes, g, c);
    const double rs = collective_time_s(Collective::reduce_scatter, s_bytes, g, c);
    const double ar = collective_time_s(Collective::all_reduce, s_bytes, g, c);
    INFO("nodes=", nodes, " ag=", ag, " rs=", rs, " ar=", ar);
    CHECK(rel(ag, (n - 1) / n * s_bytes / b) < 0.02);
    CHECK(rel(rs, (n - 1) / n * s_bytes / b) < 0.02);
    CHECK(rel(ar, 2 * (n - 1) / n * s_bytes / b) < 0.02);
  }
}

TEST_CASE("busbw computed from simulated time with nccl-tests' formula equals the configured busbw") {
  const double s_bytes = 16 * kGiB;
  for (Collective coll : {Collective::all_gather, Collective::reduce_scatter, Collective::all_reduce}) {
    for (int ranks : {2, 4, 8, 16, 64}) {
      const int nodes = ranks > 8 ? ranks / 8 : 1;
      const ClusterSpec c = dgx_h100(nodes, /*nvls=*/false);
      const GroupShape g = shape(ranks, ranks > 8 ? 8 : ranks);
      const double t = collective_time_s(coll, s_bytes, g, c);
      const double busbw = s_bytes / t * bus_bandwidth_factor(coll, ranks);
      INFO(std::string(collective_name(coll)), " ranks=", ranks, " busbw=", busbw,
           " rel=", rel(busbw, 370e9));
      CHECK(rel(busbw, 370e9) < 0.01);
    }
  }
}

TEST_CASE("latency floors of NCCL's tuning.cc constants are reproduced per algorithm/protocol") {
  struct Floor {
    Collective coll;
    NcclAlgo algo;
    NcclProto proto;
    int ranks, per_node;
    double want_us;
    double tol_us = 0.051;  // published to 0.1 µs; the integer-rounded ones get 0.5
  };
  const Floor floors[] = {
      {Collective::all_reduce, NcclAlgo::ring, NcclProto::ll, 8, 8, 15.0},
      {Collective::all_reduce, NcclAlgo::tree, NcclProto::ll, 8, 8, 15.2},
      {Collective::all_reduce, NcclAlgo::ring, NcclProto::ll128, 8, 8, 40.6},
      {Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, 8, 8, 56.0},
      {Collective::all_reduce, NcclAlgo::nvls, NcclProto::simple, 8, 8, 25.0},
      {Collective::all_gather, NcclAlgo::ring, NcclProto::ll, 8, 8, 10.8},
      {Collective::all_gather, NcclAlgo::ring, NcclProto::ll128, 8, 8, 27.3},
      {Collective::all_gather, NcclAlgo::ring, NcclProto::simple, 8, 8, 32.2},
      {Collective::all_reduce, NcclAlgo::ring, NcclProto::ll, 32, 8, 78.8},
      {Collective::all_reduce, NcclAlgo::tree, NcclProto::ll, 32, 8, 35.2},
      {Collective::all_reduce, NcclAlgo::tree, NcclProto::simple, 32, 8, 120.4},
      {Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, 32, 8, 283, 0.5},
      {Collective::all_reduce, NcclAlgo::ring, NcclProto::ll, 1024, 8, 2484, 0.5},
      {Collective::all_reduce, NcclAlgo::tree, NcclProto::ll, 1024, 8, 85, 0.5},
  };
  for (const Floor& f : floors) {
    const ClusterSpec c = dgx_h100(f.ranks / f.per_node);
    const double got_us = nccl_latency_s(f.coll, f.algo, f.proto, shape(f.ranks, f.per_node), c) / kUs;
    INFO(std::string(collective_name(f.coll)), " ", std::string(nccl_algo_name(f.algo)), "/",
         std::string(nccl_proto_name(f.proto)), " ranks=", f.ranks, " got_us=", got_us, " want_us=", f.want_us);
    CHECK(std::abs(got_us - f.want_us) <= f.tol_us);
  }
}

TEST_CASE("multi-node ring/Simple all-reduce pays the 1.4 plateau factor once past the threshold") {
  const ClusterSpec c = dgx_h100(4);
  const GroupShape g = shape(32, 8);
  const double lat = nccl_latency_s(Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, g, c);
  const double s_bytes = 64 * kGiB;
  const double bw =
      nccl_alg_bw_bytes_per_s(Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, s_bytes, g, c);
  const double t = nccl_time_s(Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, s_bytes, g, c);
  CHECK((t - s_bytes / bw) == doctest::Approx(1.4 * lat).epsilon(1e-9));
  // Tiny message: no plateau.
  const double t1 = nccl_time_s(Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, 8, g, c);
  CHECK(t1 == doctest::Approx(lat + 8 / bw).epsilon(1e-9));
  // Not for a single node.
  const ClusterSpec one = dgx_h100(1);
  const GroupShape g1 = shape(8, 8);
  const double lat1 = nccl_latency_s(Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, g1, one);
  const double bw1 =
      nccl_alg_bw_bytes_per_s(Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, s_bytes, g1, one);
  CHECK(nccl_time_s(Collective::all_reduce, NcclAlgo::ring, NcclProto::simple, s_bytes, g1, one) ==
        doctest::Approx(lat1 + s_bytes / bw1).epsilon(1e-9));
}

TEST_CASE("protocol bandwidth caps: LL min(llMaxBw, B/2), LL128 0.92·B, Simple B") {
  const ClusterSpec c = dgx_h100(1, false);
  const GroupShape g = shape(8, 8);
  const double ring_ratio = 8.0 / 7.0;  // AG: algbw = busbw · n/(n-1)
  auto algbw = [&](NcclProto p) {
    return nccl_alg_bw_bytes_per_s(Collective::all_gather, NcclAlgo::ring, p, kGiB, g, c);
  };
  CHECK(algbw(NcclProto::simple) == doctest::Approx(370e9 * ring_ratio));
  CHECK(algbw(NcclProto::ll128) == doctest::Approx(0.92 * 370e9 * ring_ratio));
  CHECK(algbw(NcclProto::ll) == doctest::Approx(141e9 * ring_ratio));  // Hopper llMaxBw < 185
}

TEST_CASE("multi-node busbw is min(NVLink busbw, NICs per node × NIC bw × share)") {
  // 8 NICs × 48 = 384 > 370: NVLink bound.
  CHECK(group_bus_bw_bytes_per_s(shape(16, 8), dgx_h100(2)) == doctest::Approx(370e9));
  // 4 NICs × 48 = 192 < 370: NIC bound.
  CHECK(group_bus_bw_bytes_per_s(shape(16, 8), dgx_h100(2, true, 4)) == doctest::Approx(192e9));
  // Eight 1-rank-per-node groups side by side share the node's NICs: 384/8 = 48 each.
  CHECK(group_bus_bw_bytes_per_s(shape(4, 1), dgx_h100(4)) == doctest::Approx(48e9));
  CHECK(group_bus_bw_bytes_per_s(shape(8, 2), dgx_h100(4)) == doctest::Approx(96e9));
  // Single node: NVLink busbw whatever the NICs.
  CHECK(group_bus_bw_bytes_per_s(shape(4, 4), dgx_h100(1, true, 1)) == doctest::Approx(370e9));
  // End to end: a NIC-bound all-gather runs at (n-1)/n·S/192 GB/s.
  const double s_bytes = 8 * kGiB;
  const double t = collective_time_s(Collective::all_gather, s_bytes, shape(16, 8), dgx_h100(2, true, 4));
  INFO("t=", t);
  CHECK(rel(t, 15.0 / 16 * s_bytes / 192e9) < 0.02);
}

TEST_CASE("small messages pick a low-latency protocol, large ones Simple or NVLS") {
  const NcclChoice small1 = nccl_best(Collective::all_reduce, 1024, shape(8, 8), dgx_h100(1));
  CHECK(small1.algo == NcclAlgo::ring);
  CHECK(small1.proto == NcclProto::ll);
  const NcclChoice small4 = nccl_best(Collective::all_reduce, 1024, shape(32, 8), dgx_h100(4));
  CHECK(small4.algo == NcclAlgo::tree);  // Tree/LL 35.2 µs vs Ring/LL 78.8 µs
  CHECK(small4.proto == NcclProto::ll);
  const NcclChoice ag_small = nccl_best(Collective::all_gather, 4096, shape(8, 8), dgx_h100(1));
  CHECK(ag_small.proto == NcclProto::ll);
  const NcclChoice big = nccl_best(Collective::all_gather, kGiB, shape(8, 8), dgx_h100(1));
  CHECK(big.algo == NcclAlgo::ring);
  CHECK(big.proto == NcclProto::simple);
  CHECK(nccl_best(Collective::all_reduce, kGiB, shape(8, 8), dgx_h100(1, true)).algo == NcclAlgo::nvls);
  CHECK(nccl_best(Collective::all_reduce, kGiB, shape(8, 8), dgx_h100(1, false)).algo == NcclAlgo::ring);
  // The floor reported by collective_latency_s is the tiny-message choice's latency.
  CHECK(collective_latency_s(Collective::all_reduce, shape(8, 8), dgx_h100(1)) == doctest::Approx(15.0e-6));
  CHECK(collective_latency_s(Collective::all_gather, shape(8, 8), dgx_h100(1)) == doctest::Approx(10.8e-6));
}

TEST_CASE("NVLS all-reduce busbw lands near the ~480 GB/s measured on 8×H100") {
  const double s_bytes = 8 * kGiB;  // NVLS needs > 256 MB to peak (nccl-tests #212)
  const double t = collective_time_s(Collective::all_reduce, s_bytes, shape(8, 8), dgx_h100(1, true));
  const double busbw = s_bytes / t * bus_bandwidth_factor(Collective::all_reduce, 8);
  INFO("busbw=", busbw, " rel=", rel(busbw, 480e9));
  CHECK(rel(busbw, 480e9) < 0.10);
  CHECK(busbw > 370e9);  // faster than the ring it replaces
}

TEST_CASE("collective time is monotone in bytes") {
  struct Case {
    int ranks, per_node, nodes;
    bool nvls;
  };
  const Case cases[] = {
      {8, 8, 1, true}, {8, 8, 1, false}, {32, 8, 4, false}, {16, 1, 16, false}, {1024, 8, 128, false}};
  for (const Case& k : cases) {
    const ClusterSpec c = dgx_h100(k.nodes, k.nvls);
    for (Collective coll : {Collective::all_gather, Collective::reduce_scatter, Collective::all_reduce,
                            Collective::broadcast, Collective::all_to_all}) {
      double prev = 0;
      for (double s = 1; s < 64 * kGiB; s *= 1.07) {
        const double t = collective_time_s(coll, s, shape(k.ranks, k.per_node), c);
        if (t < prev) {
          FAIL_CHECK(std::string(collective_name(coll)), " ranks=", k.ranks,
                     " not monotone at bytes=", s, ": ", t, " < ", prev);
          break;
        }
        prev = t;
      }
    }
  }
}

TEST_CASE("single-rank groups and empty messages cost nothing") {
  const ClusterSpec c = dgx_h100(2);
  CHECK(collective_time_s(Collective::all_reduce, kGiB, shape(1, 1), c) == 0.0);
  CHECK(collective_time_s(Collective::all_gather, kGiB, shape(1, 1), c) == 0.0);
  CHECK(collective_time_s(Collective::all_gather, 0, shape(8, 8), c) == 0.0);
  CHECK(collective_latency_s(Collective::all_reduce, shape(1, 1), c) == 0.0);
}

TEST_CASE("broadcast and send/recv move S over the bottleneck busbw") {
  const double s_bytes = kGiB;
  const double t_intra = collective_time_s(Collective::send_recv, s_bytes, shape(2, 2), dgx_h100(1));
  CHECK(t_intra == doctest::Approx(8.4e-6 + 3.4e-6 + s_bytes / 370e9));
  const double t_inter = collective_time_s(Collective::send_recv, s_bytes, shape(2, 1), dgx_h100(2));
  CHECK(t_inter == doctest::Approx(8.4e-6 + 14e-6 + s_bytes / 48e9));  // one GPU's NIC share
  const double t_bcast = collective_time_s(Collective::broadcast, s_bytes, shape(16, 8), dgx_h100(2));
  CHECK(rel(t_bcast, s_bytes / 370e9) < 0.01);
}

TEST_CASE("all-to-all: NVLink inside a node, the off-node share at the GPU's NIC rate across nodes") {
  const double s_bytes = kGiB;
  const double t1 = collective_time_s(Collective::all_to_all, s_bytes, shape(8, 8), dgx_h100(1));
  CHECK(rel(t1, 7.0 / 8 * s_bytes / 370e9) < 0.01);
  const double t2 = collective_time_s(Collective::all_to_all, s_bytes, shape(16, 8), dgx_h100(2));
  CHECK(rel(t2, 8.0 / 16 * s_bytes / 48e9) < 0.01);  // half the bytes leave at 384/8 GB/s
  CHECK(t2 > 4 * t1);  // (1/2)/48 vs (7/8)/370: 4.4× slower
}

TEST_CASE("HSDP gradient reduction is the shard reduce-scatter plus the replica all-reduce of a shard") {
  const ClusterSpec c = dgx_h100(4);
  const GroupShape shard = shape(8, 8), replica = shape(4, 1);
  for (double s_bytes : {1e3, 1e6, 1e9, 1e10}) {
    const double want = collective_time_s(Collective::reduce_scatter, s_bytes, shard, c) +
                        collective_time_s(Collective::all_reduce, s_bytes / 8, replica, c);
    CHECK(hsdp_gradient_reduce_time_s(s_bytes, shard, replica, c) == doctest::Approx(want));
  }
  // Large: RS at 370 GB/s over NVLink, then the 1/8 shard all-reduced at one NIC's 48 GB/s.
  const double s_bytes = 8 * kGiB;
  const double closed = 7.0 / 8 * s_bytes / 370e9 + 2 * 3.0 / 4 * (s_bytes / 8) / 48e9;
  const double got = hsdp_gradient_reduce_time_s(s_bytes, shard, replica, c);
  INFO("got=", got, " closed=", closed);
  CHECK(rel(got, closed) < 0.02);
  // A single replica degenerates to the reduce-scatter.
  CHECK(hsdp_gradient_reduce_time_s(s_bytes, shard, shape(1, 1), c) ==
        doctest::Approx(collective_time_s(Collective::reduce_scatter, s_bytes, shard, c)));
}

}  // namespace fsdpx
