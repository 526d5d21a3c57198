// executor/runtime/param_layout.cpp — tensor order per module: norm, qkv, attn_out, norm, mlp_up,
// mlp_down for a block (biases after their weight, per ModelSpec::bias); token then position table
// for the embedding. Weights are [out, in] as torch.nn.Linear. Leaves out vocabulary padding.
#include "executor/runtime/param_layout.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {
namespace {

struct ModuleBuilder {
  ModuleLayout m;
  void add(const std::string& name, std::int64_t rows, std::int64_t cols, InitKind init) {
    m.tensors.push_back(TensorSlot{name, m.numel, rows, cols, init});
    m.numel += rows * cols;
  }
  void add_norm(const std::string& prefix, const ModelSpec& s) {
    add(prefix + ".weight", s.hidden, 1, InitKind::ones);
    if (s.arch == Arch::gpt) add(prefix + ".bias", s.hidden, 1, InitKind::zeros);  // LayerNorm shift
  }
  void add_linear(const std::string& prefix, std::int64_t out, std::int64_t in, bool bias, InitKind init) {
    add(prefix + ".weight", out, in, init);
    if (bias) add(prefix + ".bias", out, 1, InitKind::zeros);
  }
};

ModuleLayout block_module(const ModelSpec& s, std::int64_t i) {
  ModuleBuilder b;
  b.m.name = fmt::format("block.{}", i);
  const bool qkv_bias = s.bias != LinearBias::none, all_bias = s.bias == LinearBias::all;
  b.add_norm("attn_norm", s);
  b.add_linear("qkv", s.q_dim() + 2 * s.kv_dim(), s.hidden, qkv_bias, InitKind::normal);
  b.add_linear("attn_out", s.hidden, s.q_dim(), all_bias, InitKind::normal_residual);
  b.add_norm("mlp_norm", s);
  b.add_linear("mlp_up", up_projection_width(s.ffn_kind, s.ffn_hidden), s.hidden, all_bias, InitKind::normal);
  b.add_linear("mlp_down", s.hidden, s.ffn_hidden, all_bias, InitKind::normal_residual);
  return b.m;
}

}  // namespace

const TensorSlot* ModuleLayout::find(const std::string& tensor) const {
  for (const TensorSlot& t : tensors)
    if (t.name == tensor) return &t;
  return nullptr;
}

int ParamLayout::index_of(const std::string& name) const {
  for (int i = 0; i < num_modules(); ++i)
    if (modules[static_cast<std::size_t>(i)].name == name) return i;
  FSDP_CHECK(false, "ParamLayout: unknown module " + name);
  return -1;
}

ParamLayout make_param_layout(const ModelSpec& s) {
  FSDP_CHECK(s.layers > 0 && s.hidden > 0 && s.heads > 0 && s.kv_heads > 0 && s.head_dim > 0 && s.vocab > 0 &&
                 s.ffn_hidden > 0,
             "make_param_layout: ModelSpec has a non-positive dimension");
  ParamLayout p;
  p.layers = s.layers;
  ModuleBuilder emb;
  emb.m.name = "embedding";
  emb.add("tok.weight", s.vocab, s.hidden, InitKind::normal);
  if (s.arch == Arch::gpt) emb.add("pos.weight", s.max_seq, s.hidden, InitKind::normal);
  p.modules.push_back(emb.m);
  for (std::int64_t i = 0; i < s.layers; ++i) p.modules.push_back(block_module(s, i));
  ModuleBuilder fn;
  fn.m.name = "final_norm";
  fn.add_norm("final_norm", s);
  p.modules.push_back(fn.m);
  ModuleBuilder head;
  head.m.name = "head";
  if (!s.tied_embeddings) head.add("head.weight", s.vocab, s.hidden, InitKind::normal);
  p.modules.push_back(head.m);
  for (ModuleLayout& m : p.modules) {
    m.offset = p.total;
    p.total += m.numel;
  }
  return p;
}

FlatUnitLayout make_flat_unit(const ParamLayout& layout, const std::vector<std::string>& module_names, int dp_shard) {
  FSDP_CHECK(dp_shard >= 1, "make_flat_unit: dp_shard must be >= 1");
  FlatUnitLayout u;
  for (const std::string& name : module_names) {
    const int idx = layout.index_of(name);
    u.modules.push_back(idx);
    u.module_offsets.push_back(u.numel);
    u.numel += layout.modules[static_cast<std::size_t>(idx)].numel;
  }
  u.shard_numel = (u.numel + dp_shard - 1) / dp_shard;
  u.padded_numel = u.shard_numel * dp_shard;
  return u;
}

}  // namespace fsdpx
