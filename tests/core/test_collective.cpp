// tests/core/test_collective.cpp — the collective descriptors (core/collective.h): one name per
// collective, and nccl-tests' bus-bandwidth factors with the bytes each rank moves.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "core/collective.h"

namespace fsdpx {
namespace {

TEST_CASE("collective descriptors: distinct names, nccl-tests factors, bytes moved per rank") {
  std::set<std::string> names;
  for (int c = 0; c < kCollectiveCount; ++c) {
    const CollectiveDescriptor& d = collective_descriptor(Collective(c));
    CHECK(d.kind == Collective(c));
    names.insert(d.name);
  }
  CHECK(names.size() == std::size_t(kCollectiveCount));
  CHECK(std::string(collective_name(Collective::reduce_scatter)) == "reduce_scatter");
  // nccl-tests doc/PERFORMANCE.md: a ring all-reduce moves 2(n-1)/n·S per rank, all-gather (n-1)/n·S.
  CHECK(bytes_moved_per_rank(Collective::all_reduce, 1024, 4) == doctest::Approx(1536));
  CHECK(bytes_moved_per_rank(Collective::all_gather, 1024, 4) == doctest::Approx(768));
  CHECK(bytes_moved_per_rank(Collective::broadcast, 1024, 4) == doctest::Approx(1024));
  CHECK(bytes_moved_per_rank(Collective::all_reduce, 1024, 1) == 0);
}

}  // namespace
}  // namespace fsdpx
