// tests/core/test_data_placement.cpp — every data-parallel mode as placements (core/data_placement.h):
// which state is sharded, HSDP's replication across dp_replicate, and the units' default reshard.
#include <doctest/doctest.h>

#include "core/data_placement.h"

namespace fsdpx {
namespace {

DataPlacement placed(DataParallel d, int dp_replicate = 1) {
  Parallelism par;
  par.data_parallel = d;
  par.dp_replicate = dp_replicate;
  par.dp_shard = 4;
  return data_placement(par);
}

TEST_CASE("data placement: each mode shards what ZeRO's stages say") {
  using P = Placement;
  const DataPlacement fsdp = placed(DataParallel::fsdp_full_shard);
  CHECK((fsdp.params == P::sharded && fsdp.grads == P::sharded && fsdp.optimizer == P::sharded));
  CHECK(fsdp.reshard_after_forward);
  const DataPlacement sgo = placed(DataParallel::fsdp_shard_grad_op);
  CHECK((sgo.params == P::sharded && sgo.grads == P::sharded && sgo.optimizer == P::sharded));
  CHECK_FALSE(sgo.reshard_after_forward);
  const DataPlacement hsdp = placed(DataParallel::hsdp, 2);
  CHECK((hsdp.params == P::sharded_replicated && hsdp.grads == P::sharded_replicated &&
         hsdp.optimizer == P::sharded_replicated));
  CHECK(hsdp.reshard_after_forward);
  const DataPlacement ddp = placed(DataParallel::ddp, 2);
  CHECK((ddp.params == P::replicated && ddp.grads == P::replicated && ddp.optimizer == P::replicated));
  CHECK_FALSE(ddp.reshard_after_forward);
  for (DataParallel d : {DataParallel::zero1, DataParallel::distributed_optimizer}) {
    const DataPlacement z = placed(d);
    CHECK((z.params == P::replicated && z.grads == P::sharded && z.optimizer == P::sharded));
    CHECK(placed(d, 2).grads == P::sharded_replicated);
    CHECK_FALSE(z.reshard_after_forward);
  }
  CHECK(is_sharded(P::sharded_replicated));
  CHECK_FALSE(is_sharded(P::replicated));
  CHECK(std::string(placement_name(P::sharded_replicated)) == "sharded_replicated");
}

}  // namespace
}  // namespace fsdpx
