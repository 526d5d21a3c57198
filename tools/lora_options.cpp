// tools/lora_options.cpp — LoRA command-line options (see lora_options.h).
#include "tools/lora_options.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

void add_lora_options(CLI::App* sub, LoraOptions& o) {
  sub->add_option("--lora-rank", o.rank, "LoRA rank r: fine-tune low-rank adapters on a frozen base")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{65536}));
  sub->add_option("--lora-alpha", o.alpha, "LoRA alpha (output scale alpha / r; default 2 r)")
      ->check(CLI::Range(1e-6, 1e6));
  sub->add_option("--lora-targets", o.targets, "Adapted projections, comma-separated: q,k,v,o,gate,up,down");
  sub->add_option("--lora-dropout", o.dropout, "Adapter input dropout (simulated; the executors run 0)")
      ->check(CLI::Range(0.0, 0.999));
}

std::optional<LoraSettings> lora_settings(const LoraOptions& o, const ModelSpec& m) {
  if (!o.rank) return std::nullopt;
  LoraSettings s;
  s.rank = *o.rank;
  s.alpha = o.alpha.value_or(2.0 * double(*o.rank));
  s.dropout = o.dropout;
  s.targets = parse_lora_targets(o.targets, "command line: --lora-targets");
  if (s.has_target(LoraTarget::gate) && m.ffn_kind != FfnKind::swiglu)
    throw ConfigError("command line: --lora-targets: \"gate\" needs a gated MLP (ffn_kind swiglu)");
  return s;
}

}  // namespace fsdpx
