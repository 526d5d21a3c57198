// core/data_placement.h — the data-parallel mode of a plan lowered once into placements of the training
// state on the data-parallel mesh (dp_replicate, dp_shard), the way torchtitan's SimpleFSDP expresses
// DDP, FSDP and HSDP as one mechanism (pytorch/torchtitan, torchtitan/experiments/graph_trainer/
// simple_fsdp.py: Replicate(), Shard(0), (Replicate(), Shard(0))), with ZeRO's stages as which state is
// sharded (Rajbhandari et al. 2020, "ZeRO", §5). The lowering, the estimates, the planner and the
// executor read these placements instead of switching on DataParallel. Leaves out tp, cp and pp.
#pragma once

#include <cstdint>

#include "core/plan.h"

namespace fsdpx {

enum class Placement : std::uint8_t {
  replicated,          // every data-parallel rank holds the whole tensor (DDP's Replicate())
  sharded,             // split over the dp_shard ranks; dp_replicate = 1 (FSDP's Shard(0))
  sharded_replicated,  // split over dp_shard, replicated across dp_replicate (HSDP's (Replicate(), Shard(0)))
};
const char* placement_name(Placement p);
inline bool is_sharded(Placement p) { return p != Placement::replicated; }

// Where each kind of state of a unit lives between uses.
struct DataPlacement {
  // Parameters at rest: sharded ones are all-gathered before each use; replicated ones stay unsharded
  // (and are refreshed from sharded optimizer state by one all-gather per step, ZeRO-1).
  Placement params = Placement::sharded;
  // Reduced gradients: reduce-scatter to the shards (then all-reduce across replicas when
  // sharded_replicated), or all-reduce of the whole gradient (replicated).
  Placement grads = Placement::sharded;
  Placement optimizer = Placement::sharded;  // fp32 master weights and Adam moments
  // The units' default: free sharded parameters after forward (ZeRO-3), or keep them for backward
  // (ZeRO-2; FSDP1's SHARD_GRAD_OP, Zhao et al. 2023, "PyTorch FSDP", §3.2).
  bool reshard_after_forward = true;
};

// DDP: everything replicated; zero1 and Megatron's distributed optimizer: gradients and optimizer state
// sharded, parameters replicated; fsdp_shard_grad_op: everything sharded, kept between forward and
// backward; fsdp_full_shard and hsdp: everything sharded (hsdp: and replicated across dp_replicate).
DataPlacement data_placement(const Parallelism& par);

}  // namespace fsdpx
