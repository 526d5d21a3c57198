// core/expert_parallel.cpp — the ep axis's folding onto dp_shard x cp, the experts' FSDP group, the
// routed-token imbalance and their plan checks (sources in core/expert_parallel.h). Leaves out expert
// tensor parallelism and costs.
#include "core/expert_parallel.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "core/model_spec.h"

namespace fsdpx {

int expert_fsdp_ranks(const Parallelism& p) {
  FSDP_CHECK(p.ep >= 1 && (p.dp_shard * p.cp) % p.ep == 0, "expert_fsdp_ranks: ep must divide dp_shard x cp");
  return p.dp_shard * p.cp / p.ep;
}

std::int64_t local_experts(const ModelSpec& m, const Parallelism& p) {
  FSDP_CHECK(m.is_moe() && m.moe.experts % p.ep == 0, "local_experts: ep must divide the routed experts");
  return m.moe.experts / p.ep;
}

namespace {

void check_ep_degree(const ModelSpec& m, const Parallelism& p, const std::string& file) {
  const std::string path = "/parallelism/ep";
  if (p.ep < 1) throw_config_error(file, path, fmt::format("expected an integer >= 1, got {}", p.ep));
  if (p.ep == 1) return;
  if (!m.is_moe())
    throw_config_error(file, path, fmt::format("ep ({}) > 1 needs a mixture-of-experts model; {} is dense", p.ep,
                                               m.name));
  if (m.moe.experts % p.ep != 0)
    throw_config_error(file, path, fmt::format("ep ({}) must divide the routed experts ({})", p.ep, m.moe.experts));
  if (p.ep % p.cp != 0)
    throw_config_error(file, path, fmt::format("cp ({}) must divide ep ({}): expert parallelism borrows all of "
                                               "cp and part of dp_shard (torchtitan, etp = tp)", p.cp, p.ep));
  if ((p.dp_shard * p.cp) % p.ep != 0)
    throw_config_error(file, path, fmt::format("ep ({}) must divide dp_shard ({}) x cp ({}) = {}: the experts "
                                               "fold onto those ranks", p.ep, p.dp_shard, p.cp, p.dp_shard * p.cp));
}

}  // namespace

void check_expert_parallel(const ModelSpec& m, const Parallelism& p, const MoeRouting& r,
                           const std::string& file) {
  check_ep_degree(m, p, file);
  if (!(r.token_imbalance >= 1.0 && r.token_imbalance <= kMaxRoutedTokenImbalance))
    throw_config_error(file, "/moe/token_imbalance",
                       fmt::format("expected a number in [1, {}] (the slowest ep rank's routed tokens over the "
                                   "mean), got {}", kMaxRoutedTokenImbalance, r.token_imbalance));
}

MoeRouting parse_moe_routing(JsonObject o) {
  MoeRouting r;
  if (o.has("token_imbalance")) r.token_imbalance = o.number("token_imbalance");
  o.finish();
  return r;
}

nlohmann::json moe_routing_to_json(const MoeRouting& r) { return {{"token_imbalance", r.token_imbalance}}; }

}  // namespace fsdpx
