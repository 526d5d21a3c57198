// core/collective.cpp — the collective descriptor table (see collective.h).
#include "core/collective.h"

#include "core/errors.h"

namespace fsdpx {

namespace {

double all_reduce_factor(int n) { return 2.0 * (n - 1) / n; }
double ring_factor(int n) { return double(n - 1) / n; }
double chain_factor(int) { return 1.0; }

// Indexed by Collective.
constexpr CollectiveDescriptor kDescriptors[kCollectiveCount] = {
    {Collective::all_gather, "all_gather", ring_factor},
    {Collective::reduce_scatter, "reduce_scatter", ring_factor},
    {Collective::all_reduce, "all_reduce", all_reduce_factor},
    {Collective::broadcast, "broadcast", chain_factor},
    {Collective::send_recv, "send_recv", chain_factor},
    {Collective::all_to_all, "all_to_all", ring_factor},
};

}  // namespace

const CollectiveDescriptor& collective_descriptor(Collective c) {
  const auto i = static_cast<int>(c);
  FSDP_CHECK(i >= 0 && i < kCollectiveCount && kDescriptors[i].kind == c, "unknown Collective");
  return kDescriptors[i];
}

double bus_bandwidth_factor(Collective c, int ranks) {
  FSDP_CHECK(ranks >= 1, "ranks must be >= 1");
  return collective_descriptor(c).bus_factor(ranks);
}

double bytes_moved_per_rank(Collective c, double size_bytes, int ranks) {
  return size_bytes * bus_bandwidth_factor(c, ranks);
}

}  // namespace fsdpx
