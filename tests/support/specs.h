// tests/support/specs.h — model and GPU specs that several unit tests build in code (so that cost-model
// tests do not depend on the JSON loaders): Llama-3.1-8B as its Hugging Face config.json describes it, and
// an H100 SXM.
#pragma once

#include "core/gpu_spec.h"
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

// H100 SXM figures (NVIDIA H100 datasheet and whitepaper: 989.4 TFLOP/s bf16, 66.9 FP32, 132 SMs) with
// calculon's efficiency steps as curve points (calculon systems/h100_80g_nvl8.json: 1 GFLOP → 0.6, 16 →
// 0.9, 128 → 0.95; 1 MB → 0.6, 10 → 0.75, 100 → 0.9) and FlashAttention-2's attention curves (FA3 paper).
inline GpuSpec h100_sxm() {
  GpuSpec g;
  g.name = "h100-test";
  g.peak_flops_per_s = {{DType::bf16, 989.4e12}, {DType::fp32, 66.9e12}};
  g.vector_flops_per_s = 66.9e12;
  g.sm_count = 132;
  g.hbm_bytes = 80e9;
  g.hbm_bw_bytes_per_s = 3.35e12;
  g.matmul_efficiency.points = {{1e9, 0.6}, {16e9, 0.9}, {128e9, 0.95}};
  g.memory_efficiency.points = {{1e6, 0.6}, {10e6, 0.75}, {100e6, 0.9}};
  g.attention_efficiency.points = {{512, 0.312}, {8192, 0.374}};
  g.attention_backward_efficiency.points = {{512, 0.216}, {8192, 0.321}};
  return g;
}

}  // namespace fsdpx::test
