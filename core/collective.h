// core/collective.h — the collectives, described once for the cost model (cost_models/communication.h)
// and for every communicator (thread, TCP, device threads, NCCL): each one's name, as messages and the
// step program's ops say it, and nccl-tests' bus-bandwidth factor f (NVIDIA/nccl-tests,
// doc/PERFORMANCE.md: busbw = algbw · f), which also gives the bytes each rank moves over its links
// for a collective of nccl-tests size S: S · f. Leaves out algorithms (ring, tree, NVLS): the factor
// is the bandwidth-optimal lower bound every one of them meets.
#pragma once

#include <cstdint>

namespace fsdpx {

enum class Collective : std::uint8_t { all_gather, reduce_scatter, all_reduce, broadcast, send_recv, all_to_all };
inline constexpr int kCollectiveCount = 6;

struct CollectiveDescriptor {
  Collective kind;
  const char* name;                 // "all_gather", "reduce_scatter", ...
  double (*bus_factor)(int ranks);  // nccl-tests' f for a group of `ranks`
};

const CollectiveDescriptor& collective_descriptor(Collective c);
inline const char* collective_name(Collective c) { return collective_descriptor(c).name; }
// f: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast and send/recv 1.
double bus_bandwidth_factor(Collective c, int ranks);
// Bytes one rank sends over its links for a collective of nccl-tests size S (all-gather: the gathered
// output; reduce-scatter: the input; all-reduce and broadcast: the buffer): S · f.
double bytes_moved_per_rank(Collective c, double size_bytes, int ranks);

}  // namespace fsdpx
