// tests/cost_models/test_params.cpp — parameter counts against published model sizes (Hugging Face
// safetensors totals, model cards) and PaLM model FLOPs per token against a hand evaluation.
// ModelSpecs are built in code so these tests do not depend on the JSON loaders.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "cost_models/params.h"

namespace fsdpx {
namespace {

ModelSpec llama(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t head_dim,
                std::int64_t ffn, bool tied) {
  ModelSpec m;
  m.arch = Arch::llama;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.head_dim = head_dim;
  m.ffn_hidden = ffn;
  m.ffn_kind = FfnKind::swiglu;
  m.vocab = 128256;
  m.max_seq = 131072;
  m.tied_embeddings = tied;
  m.bias = LinearBias::none;
  return m;
}

ModelSpec llama31_8b() { return llama(32, 4096, 32, 128, 14336, false); }
ModelSpec llama31_70b() { return llama(80, 8192, 64, 128, 28672, false); }
ModelSpec llama31_405b() { return llama(126, 16384, 128, 128, 53248, false); }
ModelSpec llama32_1b() { return llama(16, 2048, 32, 64, 8192, true); }

ModelSpec gpt2_124m() {
  ModelSpec m;
  m.arch = Arch::gpt;
  m.layers = 12;
  m.hidden = 768;
  m.heads = 12;
  m.kv_heads = 12;
  m.head_dim = 64;
  m.ffn_hidden = 3072;
  m.ffn_kind = FfnKind::gelu;
  m.vocab = 50257;
  m.max_seq = 1024;
  m.tied_embeddings = true;
  m.bias = LinearBias::all;
  return m;
}

// Relative difference, printed by the checks below on failure.
double rel_diff(double got, double want) { return std::abs(got - want) / std::abs(want); }

}  // namespace

TEST_CASE("count_params matches published Llama sizes within 0.5%") {
  // Model cards: 8.03B, 70.55B (70.6B), 405.85B, 1.236B (Llama-3.2-1B, tied embeddings).
  struct Case { const char* name; ModelSpec m; double published; };
  const Case cases[] = {{"Llama-3.1-8B", llama31_8b(), 8.03e9},
                        {"Llama-3.1-70B", llama31_70b(), 70.55e9},
                        {"Llama-3.1-405B", llama31_405b(), 405.85e9},
                        {"Llama-3.2-1B", llama32_1b(), 1.236e9}};
  for (const Case& c : cases) {
    const double got = static_cast<double>(count_params(c.m).total());
    const double diff = rel_diff(got, c.published);
    INFO(c.name, ": got ", got, ", published ", c.published, ", rel diff ", diff, " (tol 0.005)");
    CHECK(diff < 0.005);
  }
}

TEST_CASE("count_params is exact against Hugging Face safetensors totals") {
  // model.safetensors.index.json "total_size" in bf16 bytes / 2: 8B 16060522496, 70B 141107412992.
  CHECK(count_params(llama31_8b()).total() == 16060522496 / 2);
  CHECK(count_params(llama31_70b()).total() == 141107412992 / 2);
  // GPT-2 small as loaded by GPT2LMHeadModel (wte tied to lm_head, wpe 1024×768): 124,439,808.
  CHECK(count_params(gpt2_124m()).total() == 124439808);
}

TEST_CASE("count_params splits parts as documented") {
  const ParamCounts c = count_params(gpt2_124m());
  CHECK(c.embedding == 50257 * 768 + 1024 * 768);  // wte + wpe
  CHECK(c.head == 0);                              // tied
  CHECK(c.final_norm == 2 * 768);                  // LayerNorm scale + shift
  // One GPT-2 block by hand: c_attn 768×2304 + 2304, c_proj 768×768 + 768, c_fc 768×3072 + 3072,
  // mlp c_proj 3072×768 + 768, ln_1 and ln_2 2×768 each.
  CHECK(c.per_block == 768 * 2304 + 2304 + 768 * 768 + 768 + 768 * 3072 + 3072 + 3072 * 768 + 768 +
                           4 * 768);

  // Untying Llama-3.2-1B adds exactly one vocab×hidden head.
  ModelSpec untied = llama32_1b();
  untied.tied_embeddings = false;
  CHECK(count_params(untied).total() - count_params(llama32_1b()).total() == 128256 * 2048);
  CHECK(count_params(llama32_1b()).head == 0);
}

TEST_CASE("count_params adds Q/K/V biases for LinearBias::qkv (Qwen2 style)") {
  ModelSpec m = llama31_8b();
  const std::int64_t base = count_params(m).total();
  m.bias = LinearBias::qkv;
  // Per layer: q bias 4096 + k, v biases 1024 each.
  CHECK(count_params(m).total() - base == 32 * (4096 + 2 * 1024));
}

TEST_CASE("model_flops_per_token follows PaLM 6N + 12·L·H·Q·T") {
  // Llama-3.1-8B at T = 8192, evaluated by hand: N = 8,030,261,248 − 128256·4096 (input table) =
  // 7,504,924,672; attention 12·32·32·128·8192 = 12,884,901,888.
  const double want_8b = 6.0 * 7504924672.0 + 12884901888.0;
  const double got_8b = model_flops_per_token(llama31_8b(), 8192);
  INFO("8B: got ", got_8b, " want ", want_8b);
  CHECK(rel_diff(got_8b, want_8b) < 1e-12);

  // GPT-2 124M at T = 1024, tied: the table is the head and counts, the position table does not:
  // N = 124,439,808 − 1024·768 = 123,653,376; attention 12·12·12·64·1024 = 113,246,208.
  const double want_gpt2 = 6.0 * 123653376.0 + 113246208.0;
  const double got_gpt2 = model_flops_per_token(gpt2_124m(), 1024);
  INFO("GPT-2: got ", got_gpt2, " want ", want_gpt2);
  CHECK(rel_diff(got_gpt2, want_gpt2) < 1e-12);

  // Attention grows linearly with T: doubling T adds exactly 12·L·H·Q·T_old.
  const double delta = model_flops_per_token(llama31_8b(), 16384) - got_8b;
  CHECK(rel_diff(delta, 12884901888.0) < 1e-12);
}

}  // namespace fsdpx
