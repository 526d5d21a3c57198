// executor/model/sampler.h — text generation with the CPU reference model: each new token is drawn
// from the next-token distribution at the last position of the context (the last `window` tokens), by
// argmax at temperature 0 or from softmax(logits / temperature) with a seeded generator. Recomputes the
// whole window per token (no KV cache): meant for the small models the CPU backend trains.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx {

struct SampleOptions {
  std::int64_t tokens = 200;    // new tokens to generate
  double temperature = 0.8;     // 0: greedy
  std::uint64_t seed = 0;       // generator seed (temperature > 0)
  std::int64_t window = 0;      // context length the model sees, 1..max_seq (gpt: its position table)
  std::int64_t vocab_limit = 0;  // draw only ids below it (the byte tokens: 256); 0 = the whole vocabulary
};

// `params`: the full model [make_param_layout(model).total] in layout order; `prompt` non-empty.
// Returns the generated tokens only; `token_probs`, when given, receives each one's probability under
// the model (softmax of the logits at temperature 1, over the whole vocabulary).
std::vector<std::int32_t> sample_tokens(const ModelSpec& model, std::span<const float> params,
                                        const std::vector<std::int32_t>& prompt, const SampleOptions& options,
                                        std::vector<float>* token_probs = nullptr);

// Index drawn from `probs` at `temperature` (0: the first largest); `u` uniform in [0, 1). Exposed for tests.
std::int64_t draw_token(std::span<const float> probs, double temperature, double u);

}  // namespace fsdpx
