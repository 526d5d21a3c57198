// tests/executor/buffer_fixtures.h — the buffers' elements (TensorSlot::buffer: DeepSeek-V3's
// e_score_correction_bias) in a Trainer's state and full parameters, for the tests that AdamW leaves them as
// loaded (executor/model/optimizer_ranges.h) on the CPU and the emulated CUDA backend. Leaves out tp slices
// (states of tp = 1 runs only).
#pragma once

#include <cstdint>
#include <vector>

#include "executor/runtime/param_layout.h"
#include "executor/session/trainer.h"

namespace fsdpx::test {

// Sets every buffer element of `s` (the full model's shards, as Trainer::state gives them) to `value`;
// returns how many it set.
inline std::int64_t set_buffers(TrainerState& s, const ModelSpec& m, float value) {
  const ParamLayout full = make_param_layout(m);
  std::int64_t n = 0;
  for (RankState& rank : s.ranks)
    for (UnitShardState& u : rank.units)
      for (const UnitModule& um : u.modules)
        for (const ModuleLayout& ml : full.modules)
          if (ml.name == um.name)
            for (const TensorSlot& t : ml.tensors)
              for (std::int64_t e = 0; t.buffer && e < t.numel(); ++e) {
                const std::int64_t at = um.offset + t.offset + e - u.shard_offset;
                if (at < 0 || at >= std::int64_t(u.params.size())) continue;
                u.params[std::size_t(at)] = value, ++n;
              }
  return n;
}

// The buffers' values in full parameters (Trainer::gather_full_params: module order).
inline std::vector<float> buffer_values(const std::vector<float>& full_params, const ModelSpec& m) {
  std::vector<float> out;
  for (const ModuleLayout& ml : make_param_layout(m).modules)
    for (const TensorSlot& t : ml.tensors)
      for (std::int64_t e = 0; t.buffer && e < t.numel(); ++e)
        out.push_back(full_params[std::size_t(ml.offset + t.offset + e)]);
  return out;
}

}  // namespace fsdpx::test
