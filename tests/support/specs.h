// tests/support/specs.h — model specs that several unit tests build in code (so that cost-model tests
// do not depend on the JSON loaders): Llama-3.1-8B as its Hugging Face config.json describes it.
#pragma once

#include "core/model_spec.h"

namespace fsdpx::test {

// Llama-3.1-8B: 32 layers, hidden 4096, 32 query / 8 KV heads of 128, SwiGLU 14336, vocab 128256,
// untied, no biases (meta-llama/Llama-3.1-8B config.json).
inline ModelSpec llama31_8b() {
  ModelSpec m;
  m.name = "llama3.1-8b";
  m.arch = Arch::llama;
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 14336;
  m.ffn_kind = FfnKind::swiglu;
  m.vocab = 128256;
  m.max_seq = 131072;
  m.tied_embeddings = false;
  m.bias = LinearBias::none;
  return m;
}

}  // namespace fsdpx::test
