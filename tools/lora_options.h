// tools/lora_options.h — the LoRA options `fsdpx plan` and `fsdpx estimate` share: --lora-rank turns
// LoRA on (core/lora.h), --lora-alpha, --lora-targets (comma-separated q,k,v,o,gate,up,down) and
// --lora-dropout refine it. Leaves out reading LoRA settings from a peft adapter_config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/lora.h"
#include "core/model_spec.h"

namespace fsdpx {

struct LoraOptions {
  std::optional<std::int64_t> rank;
  std::optional<double> alpha;  // default 2·rank
  std::string targets = "q,k,v,o,gate,up,down";
  double dropout = 0;
};

// nullopt without --lora-rank; ConfigError "command line: --lora-...: ..." for a bad value.
std::optional<LoraSettings> lora_settings(const LoraOptions& o, const ModelSpec& m);

}  // namespace fsdpx
