// executor/checkpoint/hf_export.cpp — names and layouts from transformers' modeling_llama.py,
// modeling_qwen2.py and modeling_gpt2.py (GPT-2's Conv1D computes x @ W + b with W [in, out]). RoPE needs
// no permutation: fsdpx rotates dim i with dim i + head_dim/2, as LlamaRotaryEmbedding's rotate_half.
#include "executor/checkpoint/hf_export.h"

#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/shard_file.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {
namespace {

// Reads tensors of one module out of the full buffer and appends Hugging Face tensors.
class Writer {
 public:
  Writer(const ParamLayout& layout, std::span<const float> full) : layout_(layout), full_(full) {}

  // Rows [row0, row0 + rows) of `module`'s `slot` ([rows_total, cols]); transposed to [cols, rows] if asked.
  void put(const std::string& hf_name, const std::string& module, const std::string& slot, std::int64_t row0 = 0,
           std::int64_t rows = -1, bool transpose = false) {
    const ModuleLayout& m = layout_.modules[static_cast<std::size_t>(layout_.index_of(module))];
    const TensorSlot* t = m.find(slot);
    FSDP_CHECK(t != nullptr, "export-hf: no tensor " + module + "." + slot);
    if (rows < 0) rows = t->rows;
    const float* base = full_.data() + m.offset + t->offset + row0 * t->cols;
    std::vector<float> v(base, base + rows * t->cols);
    std::vector<std::int64_t> shape{rows, t->cols};
    if (transpose) {
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < t->cols; ++c) v[static_cast<std::size_t>(c * rows + r)] = base[r * t->cols + c];
      shape = {t->cols, rows};
    }
    if (t->cols == 1 && !transpose) shape = {rows};  // norm scales and biases are 1-D
    out.tensors.push_back(st_floats(hf_name, StDType::f32, shape, v));
  }
  void zeros(const std::string& hf_name, std::int64_t n) {
    const std::vector<float> v(static_cast<std::size_t>(n), 0.0f);
    out.tensors.push_back(st_floats(hf_name, StDType::f32, {n}, v));
  }
  bool has(const std::string& module, const std::string& slot) const {
    return layout_.modules[static_cast<std::size_t>(layout_.index_of(module))].find(slot) != nullptr;
  }

  SafetensorsFile out;

 private:
  const ParamLayout& layout_;
  std::span<const float> full_;
};

[[noreturn]] void unsupported(const ModelSpec& m, const std::string& why) {
  throw ConfigError(fmt::format("export-hf: model {}: {}", m.name, why));
}

// transformers' yarn keys (modeling_rope_utils.py _validate_yarn_rope_parameters); the optional ones only
// where the model sets them, so transformers computes the same attention factor.
nlohmann::json hf_yarn(const RopeScaling& s) {
  nlohmann::json j{{"rope_type", "yarn"},          {"factor", s.factor},
                   {"original_max_position_embeddings", s.original_max_seq},
                   {"beta_fast", s.beta_fast},     {"beta_slow", s.beta_slow},
                   {"truncate", s.truncate}};
  if (s.mscale > 0) j["mscale"] = s.mscale;
  if (s.mscale_all_dim > 0) j["mscale_all_dim"] = s.mscale_all_dim;
  if (s.attention_factor > 0) j["attention_factor"] = s.attention_factor;
  return j;
}

nlohmann::json llama_config(const ModelSpec& m) {
  const bool qwen2 = m.bias == LinearBias::qkv;
  nlohmann::json c{{"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
                   {"model_type", qwen2 ? "qwen2" : "llama"},
                   {"hidden_size", m.hidden},
                   {"intermediate_size", m.ffn_hidden},
                   {"num_hidden_layers", m.layers},
                   {"num_attention_heads", m.heads},
                   {"num_key_value_heads", m.kv_heads},
                   {"vocab_size", m.vocab},
                   {"max_position_embeddings", m.max_seq},
                   {"rms_norm_eps", m.norm_eps},
                   {"rope_theta", m.rope_theta},
                   {"rope_scaling", nullptr},
                   {"tie_word_embeddings", m.tied_embeddings},
                   {"hidden_act", "silu"},
                   {"torch_dtype", "float32"}};
  if (qwen2) {
    c["use_sliding_window"] = false;
  } else {
    c["head_dim"] = m.head_dim;
    c["attention_bias"] = m.bias == LinearBias::all;
    c["mlp_bias"] = m.bias == LinearBias::all;
  }
  if (m.rope_scaling.kind == RopeScalingKind::llama3)
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", m.rope_scaling.factor},
                         {"low_freq_factor", m.rope_scaling.low_freq_factor},
                         {"high_freq_factor", m.rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", m.rope_scaling.original_max_seq}};
  if (m.rope_scaling.kind == RopeScalingKind::yarn) c["rope_scaling"] = hf_yarn(m.rope_scaling);
  return c;
}

void llama_tensors(const ModelSpec& m, Writer& w) {
  w.put("model.embed_tokens.weight", "embedding", "tok.weight");
  const std::int64_t q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden;
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const std::string b = fmt::format("block.{}", i), p = fmt::format("model.layers.{}.", i);
    w.put(p + "input_layernorm.weight", b, "attn_norm.weight");
    const char* parts[] = {"q_proj", "k_proj", "v_proj"};
    const std::int64_t row0[] = {0, q, q + kv}, rows[] = {q, kv, kv};
    for (int k = 0; k < 3; ++k) {
      w.put(p + "self_attn." + parts[k] + ".weight", b, "qkv.weight", row0[k], rows[k]);
      if (w.has(b, "qkv.bias")) w.put(p + "self_attn." + parts[k] + ".bias", b, "qkv.bias", row0[k], rows[k]);
    }
    w.put(p + "self_attn.o_proj.weight", b, "attn_out.weight");
    if (w.has(b, "attn_out.bias")) w.put(p + "self_attn.o_proj.bias", b, "attn_out.bias");
    w.put(p + "post_attention_layernorm.weight", b, "mlp_norm.weight");
    w.put(p + "mlp.gate_proj.weight", b, "mlp_up.weight", 0, f);  // silu(gate) · up: gate rows first
    w.put(p + "mlp.up_proj.weight", b, "mlp_up.weight", f, f);
    w.put(p + "mlp.down_proj.weight", b, "mlp_down.weight");
    if (w.has(b, "mlp_up.bias")) {
      w.put(p + "mlp.gate_proj.bias", b, "mlp_up.bias", 0, f);
      w.put(p + "mlp.up_proj.bias", b, "mlp_up.bias", f, f);
      w.put(p + "mlp.down_proj.bias", b, "mlp_down.bias");
    }
  }
  w.put("model.norm.weight", "final_norm", "final_norm.weight");
  if (!m.tied_embeddings) w.put("lm_head.weight", "head", "head.weight");
}

nlohmann::json gpt2_config(const ModelSpec& m) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"n_embd", m.hidden},
          {"n_layer", m.layers},
          {"n_head", m.heads},
          {"n_positions", m.max_seq},
          {"n_ctx", m.max_seq},
          {"n_inner", m.ffn_hidden},
          {"vocab_size", m.vocab},
          {"layer_norm_epsilon", m.norm_eps},
          {"activation_function", "gelu_new"},  // the tanh approximation fsdpx computes
          {"resid_pdrop", 0.0},
          {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},
          {"tie_word_embeddings", m.tied_embeddings},
          {"bos_token_id", nullptr},  // GPT2Config's default 50256 is no byte token
          {"eos_token_id", nullptr},
          {"torch_dtype", "float32"}};
}

// A bias fsdpx does not have is a zero bias in GPT-2 (whose linear layers always carry one).
void gpt2_linear(Writer& w, const std::string& hf, const std::string& b, const std::string& slot,
                 std::int64_t out) {
  w.put(hf + ".weight", b, slot + ".weight", 0, -1, true);
  if (w.has(b, slot + ".bias")) w.put(hf + ".bias", b, slot + ".bias");
  else w.zeros(hf + ".bias", out);
}

void gpt2_tensors(const ModelSpec& m, Writer& w) {
  w.put("transformer.wte.weight", "embedding", "tok.weight");
  w.put("transformer.wpe.weight", "embedding", "pos.weight");
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const std::string b = fmt::format("block.{}", i), p = fmt::format("transformer.h.{}.", i);
    w.put(p + "ln_1.weight", b, "attn_norm.weight");
    w.put(p + "ln_1.bias", b, "attn_norm.bias");
    gpt2_linear(w, p + "attn.c_attn", b, "qkv", 3 * m.hidden);
    gpt2_linear(w, p + "attn.c_proj", b, "attn_out", m.hidden);
    w.put(p + "ln_2.weight", b, "mlp_norm.weight");
    w.put(p + "ln_2.bias", b, "mlp_norm.bias");
    gpt2_linear(w, p + "mlp.c_fc", b, "mlp_up", m.ffn_hidden);
    gpt2_linear(w, p + "mlp.c_proj", b, "mlp_down", m.hidden);
  }
  w.put("transformer.ln_f.weight", "final_norm", "final_norm.weight");
  w.put("transformer.ln_f.bias", "final_norm", "final_norm.bias");
  if (!m.tied_embeddings) w.put("lm_head.weight", "head", "head.weight");
}


}  // namespace

HfCheckpoint to_hugging_face(const ModelSpec& m, std::span<const float> full) {
  const ParamLayout layout = make_param_layout(m);
  FSDP_CHECK(std::int64_t(full.size()) == layout.total, "export-hf: parameter count");
  Writer w(layout, full);
  HfCheckpoint c;
  if (m.is_moe() || m.is_mla())  // trained on the CPU (executor/model/moe_mlp.h, mla_attention.h), not mapped yet
    unsupported(m, "mixture-of-experts and latent-attention weights are not exported to Hugging Face's layout yet "
                   "(issue 30)");
  if (m.arch == Arch::llama) {
    if (m.ffn_kind != FfnKind::swiglu) unsupported(m, "transformers' Llama and Qwen2 MLPs are SwiGLU only");
    if (m.bias == LinearBias::qkv && m.head_dim * m.heads != m.hidden)
      unsupported(m, "Qwen2 (q/k/v bias) needs head_dim = hidden / heads");
    c.config = llama_config(m);
    llama_tensors(m, w);
  } else {
    if (m.ffn_kind != FfnKind::gelu) unsupported(m, "GPT-2's MLP is GELU only");
    if (m.kv_heads != m.heads || m.head_dim * m.heads != m.hidden)
      unsupported(m, "GPT-2 needs kv_heads = heads and head_dim = hidden / heads");
    c.config = gpt2_config(m);
    gpt2_tensors(m, w);
  }
  c.weights = std::move(w.out);
  c.weights.metadata = {{"format", "pt"}};  // what transformers' safetensors loader expects
  return c;
}

void write_hugging_face(const std::string& out_dir, const HfCheckpoint& c) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot create the directory: {}", out_dir, ec.message()));
  const std::filesystem::path dir(out_dir);
  write_safetensors((dir / "model.safetensors").string(), c.weights);
  write_output_file((dir / "config.json").string(), c.config.dump(2) + "\n");
}

}  // namespace fsdpx
