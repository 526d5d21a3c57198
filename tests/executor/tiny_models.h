// tests/executor/tiny_models.h — small ModelSpecs and random token batches for the executor tests:
// sizes chosen so that finite-difference checks of every parameter sample run in well under a second.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx::test {

// Llama-style: RMSNorm, RoPE, GQA (4 query heads on 2 kv heads), SwiGLU, untied head, no biases.
inline ModelSpec tiny_llama() {
  ModelSpec s;
  s.name = "tiny-llama";
  s.arch = Arch::llama;
  s.layers = 2, s.hidden = 16, s.heads = 4, s.kv_heads = 2, s.head_dim = 4, s.ffn_hidden = 24;
  s.ffn_kind = FfnKind::swiglu;
  s.vocab = 13, s.max_seq = 16;
  s.tied_embeddings = false;
  s.bias = LinearBias::none;
  return s;
}

// GPT-2-style: LayerNorm, learned positions, GELU, biases everywhere, tied head.
inline ModelSpec tiny_gpt() {
  ModelSpec s;
  s.name = "tiny-gpt";
  s.arch = Arch::gpt;
  s.layers = 2, s.hidden = 16, s.heads = 2, s.kv_heads = 2, s.head_dim = 8, s.ffn_hidden = 32;
  s.ffn_kind = FfnKind::gelu;
  s.vocab = 13, s.max_seq = 8;
  s.tied_embeddings = true;
  s.bias = LinearBias::all;
  return s;
}

struct TokenBatch {
  std::vector<std::int32_t> tokens, targets;  // [B, T] each
};

inline TokenBatch random_tokens(std::int64_t b, std::int64_t t, std::int64_t vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, std::int32_t(vocab - 1));
  TokenBatch out;
  for (std::int64_t i = 0; i < b * t; ++i) out.tokens.push_back(dist(rng)), out.targets.push_back(dist(rng));
  return out;
}

}  // namespace fsdpx::test
