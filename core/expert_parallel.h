// core/expert_parallel.h — expert parallelism as a plan axis: how ep folds onto the data-parallel
// ranks (torchtitan's ParallelDims with etp = tp: ep borrows all of cp and part of dp_shard), the
// experts' own FSDP group, the routed-token imbalance a plan assumes, and their checks. Leaves out
// expert tensor parallelism (etp), which fsdpx does not plan, and every cost (cost_models/moe_*.h).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/plan_settings.h"

namespace fsdpx {

class JsonObject;  // core/json_reader.h

struct ModelSpec;

// The slowest expert-parallel rank's routed tokens over the mean (1 + MaxVio, Wang et al. 2024,
// arXiv:2408.15664 §4, taken over one rank's experts). The default 1.25 is an ASSUMPTION, not a
// measurement: no published run states its per-rank imbalance; set it from a profile when known.
inline constexpr double kDefaultRoutedTokenImbalance = 1.25;
inline constexpr double kMaxRoutedTokenImbalance = 1024;  // input bound; the costs cap it at ep

struct MoeRouting {
  double token_imbalance = kDefaultRoutedTokenImbalance;  // >= 1; costs use min(it, ep): all tokens on one rank
};

// torchtitan torchtitan/distributed/parallel_dims.py build_mesh: dp_shard_in_ep = dp_shard x cp / ep
// (etp = tp): the ranks one expert's parameters are FSDP-sharded over.
int expert_fsdp_ranks(const Parallelism& p);
// Routed experts each expert-parallel rank holds: experts / ep (Megatron-LM BaseMoELayer
// num_local_experts).
std::int64_t local_experts(const ModelSpec& m, const Parallelism& p);

// Plan checks, failing "<file>: /parallelism/ep: ..." or "/moe/token_imbalance": ep >= 1; ep > 1 needs
// an MoE model; experts % ep == 0 (Megatron-LM megatron/core/transformer/moe/moe_layer.py BaseMoELayer:
// "num_moe_experts % expert_parallel_size == 0"); ep % cp == 0 and (dp_shard x cp) % ep == 0
// (torchtitan ParallelDims._validate, etp = tp); the imbalance in [1, kMaxRoutedTokenImbalance].
void check_expert_parallel(const ModelSpec& m, const Parallelism& p, const MoeRouting& r,
                           const std::string& file);

MoeRouting parse_moe_routing(JsonObject o);
nlohmann::json moe_routing_to_json(const MoeRouting& r);

}  // namespace fsdpx
