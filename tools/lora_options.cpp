// tools/lora_options.cpp — LoRA command-line options (see lora_options.h).
#include "tools/lora_options.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

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
