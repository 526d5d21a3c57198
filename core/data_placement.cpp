// core/data_placement.cpp — the data-parallel modes as placements (see data_placement.h).
#include "core/data_placement.h"

#include "core/errors.h"

namespace fsdpx {

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::replicated: return "replicated";
    case Placement::sharded: return "sharded";
    case Placement::sharded_replicated: return "sharded_replicated";
  }
  FSDP_CHECK(false, "unknown Placement");
  return "";
}

DataPlacement data_placement(const Parallelism& par) {
  const Placement shard = par.dp_replicate > 1 ? Placement::sharded_replicated : Placement::sharded;
  switch (par.data_parallel) {
    case DataParallel::fsdp_full_shard:
    case DataParallel::hsdp: return {shard, shard, shard, true};
    case DataParallel::fsdp_shard_grad_op: return {shard, shard, shard, false};
    case DataParallel::ddp: return {Placement::replicated, Placement::replicated, Placement::replicated, false};
    case DataParallel::zero1:
    case DataParallel::distributed_optimizer: return {Placement::replicated, shard, shard, false};
  }
  FSDP_CHECK(false, "unknown DataParallel");
  return {};
}

}  // namespace fsdpx
