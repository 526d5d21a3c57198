// tests/cuda/cuda_tiny_models.h — the executor tests' tiny llama and gpt (tests/executor/tiny_models.h)
// widened to what the flash attention kernel takes (head_dim 32), for the CUDA model and trainer tests
// that compare with the CPU backend, and mixtral-tiny likewise. Leaves out larger shapes (tools/gpu_acceptance.sh runs those).
#pragma once

#include "core/config_paths.h"
#include "core/model_spec.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx::cuda::test {

// RMSNorm, RoPE, GQA, SwiGLU, untied head, no biases; hidden 64, heads of 32.
inline ModelSpec cuda_tiny_llama() {
  ModelSpec s = fsdpx::test::tiny_llama();
  s.hidden = 64, s.head_dim = 32, s.ffn_hidden = 96, s.vocab = 128, s.max_seq = 64;
  return s;
}

// LayerNorm, learned positions, GELU, all biases, tied head; 2 heads of 32.
inline ModelSpec cuda_tiny_gpt() {
  ModelSpec s = fsdpx::test::tiny_gpt();
  s.hidden = 64, s.head_dim = 32, s.ffn_hidden = 128, s.vocab = 96, s.max_seq = 48;
  return s;
}

// configs/models/mixtral-tiny.json (a softmax router over 4 experts, top 2 renormalised, the
// load-balancing loss) with heads of 32, as the flash kernel takes them.
inline ModelSpec cuda_tiny_mixtral() {
  ModelSpec s = load_model("mixtral-tiny");
  s.head_dim = 32;
  return s;
}

}  // namespace fsdpx::cuda::test
