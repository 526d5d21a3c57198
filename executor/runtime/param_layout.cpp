// executor/runtime/param_layout.cpp — tensor order per module: norm, qkv, attn_out, norm, mlp_up,
// mlp_down for a block (biases after their weight, per ModelSpec::bias; an MoE block: router,
// experts.mlp_up, experts.mlp_down after the norm, DeepSeek-V3's router.e_score_correction_bias after the
// router and its shared expert's shared.mlp_up [gate | up], shared.mlp_down last; latent attention's attn.*
// projections in place of qkv, mla_attention.h); token then position table for the embedding.
// Weights are [out, in] as torch.nn.Linear. Tensor-parallel slices follow Megatron-LM
// (megatron/core/tensor_parallel/layers.py: ColumnParallelLinear splits the output rows, RowParallelLinear
// the input columns and adds its bias after the reduction; VocabParallelEmbedding splits the vocabulary
// rows). Leaves out vocabulary padding.
#include "executor/runtime/param_layout.h"

#include <numeric>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {
namespace {

std::vector<std::int64_t> row_range(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
  std::iota(rows.begin(), rows.end(), first);
  return rows;
}

// Local row i of a slice split `tp` ways by rows: rank r holds rows [r·rows/tp, (r+1)·rows/tp).
std::vector<std::int64_t> even_rows(std::int64_t rows, TpSlice tp) {
  return row_range(tp.rank * (rows / tp.ranks), rows / tp.ranks);
}

// How one full tensor [rows, cols] is sliced on this rank.
struct Slice {
  std::vector<std::int64_t> rows;  // full rows held, in local order (empty: all)
  std::int64_t cols = 0;           // local columns (0: all)
  std::int64_t col_offset = 0;
};

struct ModuleBuilder {
  ModuleLayout m;
  void add(const std::string& name, std::int64_t rows, std::int64_t cols, InitKind init, const Slice& s = {},
           bool expert = false) {
    TensorSlot t;
    t.expert = expert;
    t.name = name, t.offset = m.numel, t.rows = rows, t.cols = cols, t.init = init;
    t.full_offset = m.full_numel;
    t.full_cols = cols;
    t.tp_replicated = (s.rows.empty() && s.cols == 0) || expert;  // an ep slice is whole on every tp rank
    if (!s.rows.empty()) t.rows = std::int64_t(s.rows.size()), t.full_rows = s.rows;
    if (s.cols > 0) t.cols = s.cols, t.col_offset = s.col_offset;
    m.tensors.push_back(t);
    m.numel += t.numel();
    m.full_numel += rows * cols;
  }
  void add_norm(const std::string& prefix, const ModelSpec& s) {
    add(prefix + ".weight", s.hidden, 1, InitKind::ones);
    if (s.arch == Arch::gpt) add(prefix + ".bias", s.hidden, 1, InitKind::zeros);  // LayerNorm shift
  }
  // Column-parallel: output rows split; its bias follows the rows.
  void add_column_parallel(const std::string& prefix, std::int64_t out, std::int64_t in, bool bias,
                           const std::vector<std::int64_t>& rows) {
    add(prefix + ".weight", out, in, InitKind::normal, Slice{rows});
    if (bias) add(prefix + ".bias", out, 1, InitKind::zeros, Slice{rows});
  }
  // Row-parallel: input columns split; the bias is added after the reduction, whole on every rank.
  void add_row_parallel(const std::string& prefix, std::int64_t out, std::int64_t in, bool bias, TpSlice tp) {
    const std::int64_t cols = in / tp.ranks;
    add(prefix + ".weight", out, in, InitKind::normal_residual,
        tp.ranks > 1 ? Slice{{}, cols, tp.rank * cols} : Slice{});
    if (bias) add(prefix + ".bias", out, 1, InitKind::zeros);
  }
};

// SwiGLU's mlp_up is [gate; up], each F rows: rank r holds its F/tp rows of both.
std::vector<std::int64_t> mlp_up_rows(const ModelSpec& s, TpSlice tp) {
  std::vector<std::int64_t> rows = even_rows(s.ffn_hidden, tp);
  if (s.ffn_kind != FfnKind::swiglu) return rows;
  for (std::int64_t r : even_rows(s.ffn_hidden, tp)) rows.push_back(s.ffn_hidden + r);
  return rows;
}

// The local experts' rows of a tensor of `rows_per_expert` rows per expert (all of them at ep 1).
Slice expert_rows(const ModelSpec& s, std::int64_t rows_per_expert, EpSlice ep) {
  if (ep.ranks == 1) return {};
  const std::int64_t local = s.moe.experts / ep.ranks;
  return Slice{row_range(ep.rank * local * rows_per_expert, local * rows_per_expert)};
}

// DeepseekV3Attention's projections (executor/model/mla_attention.h), then attn_out (o_proj, H·v wide).
void add_mla(ModuleBuilder& b, const ModelSpec& s, bool split) {
  FSDP_CHECK(!split && s.bias == LinearBias::none, "make_param_layout: latent attention without tp or biases");
  const MlaSpec& a = s.mla;
  const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0) {
    b.add("attn.q_a.weight", a.q_lora_rank, s.hidden, InitKind::normal);
    b.add("attn.q_a_norm.weight", a.q_lora_rank, 1, InitKind::ones);
    b.add("attn.q_b.weight", s.heads * qk, a.q_lora_rank, InitKind::normal);
  } else {
    b.add("attn.q.weight", s.heads * qk, s.hidden, InitKind::normal);
  }
  b.add("attn.kv_a.weight", a.kv_lora_rank + a.qk_rope_head_dim, s.hidden, InitKind::normal);
  b.add("attn.kv_a_norm.weight", a.kv_lora_rank, 1, InitKind::ones);
  b.add("attn.kv_b.weight", s.heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, InitKind::normal);
  b.add("attn_out.weight", s.hidden, s.heads * a.v_head_dim, InitKind::normal_residual);
}

ModuleLayout block_module(const ModelSpec& s, std::int64_t i, TpSlice tp, EpSlice ep) {
  ModuleBuilder b;
  b.m.name = fmt::format("block.{}", i);
  const bool qkv_bias = s.bias != LinearBias::none, all_bias = s.bias == LinearBias::all;
  const bool split = tp.ranks > 1;
  b.add_norm("attn_norm", s);
  if (s.is_mla()) {
    add_mla(b, s, split);
  } else {
    b.add_column_parallel("qkv", s.q_dim() + 2 * s.kv_dim(), s.hidden, qkv_bias,
                          split ? qkv_rows_of_rank(s, tp) : std::vector<std::int64_t>{});
    b.add_row_parallel("attn_out", s.hidden, s.q_dim(), all_bias, tp);
  }
  b.add_norm("mlp_norm", s);
  if (s.is_moe() && i >= s.moe.dense_layers) {  // MixtralSparseMoeBlock: gate, then experts' w1|w3 and w2
    FSDP_CHECK(!split && !s.moe.shared_expert_gate,
               "make_param_layout: MoE blocks without tensor parallelism or shared-expert gates");
    const std::int64_t e = s.moe.experts, f = s.moe.expert_ffn_hidden;
    b.add("router.weight", e, s.hidden, InitKind::normal);
    // DeepseekV3TopkRouter's buffer: zeros, selection only, never given a gradient (moe_mlp.h).
    if (s.moe.score_correction_bias) {
      b.add("router.e_score_correction_bias", e, 1, InitKind::zeros);
      b.m.tensors.back().buffer = true;  // outside the optimizer (TensorSlot::buffer)
    }
    FSDP_CHECK(ep.ranks >= 1 && e % ep.ranks == 0 && ep.rank >= 0 && ep.rank < ep.ranks,
               "make_param_layout: ep divides the experts");
    b.add("experts.mlp_up.weight", e * 2 * f, s.hidden, InitKind::normal, expert_rows(s, 2 * f, ep), true);
    b.add("experts.mlp_down.weight", e * s.hidden, f, InitKind::normal_residual, expert_rows(s, s.hidden, ep), true);
    if (s.moe.shared_experts > 0) {  // DeepseekV3MoE.shared_experts: one MLP of shared_experts x their width
      const std::int64_t sf = s.moe.shared_experts * s.moe.shared_ffn_hidden;
      b.add("shared.mlp_up.weight", 2 * sf, s.hidden, InitKind::normal);
      b.add("shared.mlp_down.weight", s.hidden, sf, InitKind::normal_residual);
    }
    return b.m;
  }
  b.add_column_parallel("mlp_up", up_projection_width(s.ffn_kind, s.ffn_hidden), s.hidden, all_bias,
                        split ? mlp_up_rows(s, tp) : std::vector<std::int64_t>{});
  b.add_row_parallel("mlp_down", s.hidden, s.ffn_hidden, all_bias, tp);
  return b.m;
}

void check_tp(const ModelSpec& s, TpSlice tp) {
  FSDP_CHECK(tp.ranks >= 1 && tp.rank >= 0 && tp.rank < tp.ranks, "make_param_layout: tp rank out of range");
  FSDP_CHECK(s.heads % tp.ranks == 0 && s.ffn_hidden % tp.ranks == 0 && s.vocab % tp.ranks == 0,
             "make_param_layout: tp must divide heads, ffn_hidden and vocab");
  FSDP_CHECK(s.kv_heads % tp.ranks == 0 || tp.ranks % s.kv_heads == 0,
             "make_param_layout: tp and kv_heads must divide one another");
}

}  // namespace

std::int64_t TensorSlot::full_element(std::int64_t e) const {
  const std::int64_t row = e / cols, col = e % cols;
  const std::int64_t full_row = full_rows.empty() ? row : full_rows[static_cast<std::size_t>(row)];
  return full_offset + full_row * full_cols + col_offset + col;
}

std::int64_t ModuleLayout::full_element(std::int64_t e) const {
  for (const TensorSlot& t : tensors)
    if (e < t.offset + t.numel()) return t.full_element(e - t.offset);
  FSDP_CHECK(false, "ModuleLayout::full_element: element outside " + name);
  return -1;
}

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

// kv_heads divisible by tp: rank r's query heads, then its KV heads' K rows, then their V rows. Fewer
// KV heads than ranks: Megatron-LM orders the fused projection by query group, [group g: its query
// heads, K head g, V head g], and splits those rows evenly (megatron/core/transformer/attention.py,
// SelfAttention.get_query_key_value_tensors, the num_query_groups < world_size branch).
std::vector<std::int64_t> qkv_rows_of_rank(const ModelSpec& s, TpSlice tp) {
  const std::int64_t hd = s.head_dim, q = s.q_dim(), kv = s.kv_dim();
  if (s.kv_heads % tp.ranks == 0) {
    std::vector<std::int64_t> rows = even_rows(q, tp);
    for (std::int64_t r : even_rows(kv, tp)) rows.push_back(q + r);
    for (std::int64_t r : even_rows(kv, tp)) rows.push_back(q + kv + r);
    return rows;
  }
  std::vector<std::int64_t> grouped;  // full rows in group-interleaved order
  const std::int64_t heads_per_group = s.heads / s.kv_heads;
  for (std::int64_t g = 0; g < s.kv_heads; ++g) {
    for (std::int64_t r : row_range(g * heads_per_group * hd, heads_per_group * hd)) grouped.push_back(r);
    for (std::int64_t r : row_range(q + g * hd, hd)) grouped.push_back(r);
    for (std::int64_t r : row_range(q + kv + g * hd, hd)) grouped.push_back(r);
  }
  const std::int64_t per_rank = std::int64_t(grouped.size()) / tp.ranks;
  return std::vector<std::int64_t>(grouped.begin() + tp.rank * per_rank, grouped.begin() + (tp.rank + 1) * per_rank);
}

ParamLayout make_param_layout(const ModelSpec& s, TpSlice tp, EpSlice ep) {
  FSDP_CHECK(s.layers > 0 && s.hidden > 0 && s.heads > 0 && s.kv_heads > 0 && s.head_dim > 0 && s.vocab > 0 &&
                 s.ffn_hidden > 0,
             "make_param_layout: ModelSpec has a non-positive dimension");
  check_tp(s, tp);
  const bool split = tp.ranks > 1;
  ParamLayout p;
  p.layers = s.layers;
  ModuleBuilder emb;
  emb.m.name = "embedding";
  emb.add("tok.weight", s.vocab, s.hidden, InitKind::normal, split ? Slice{even_rows(s.vocab, tp)} : Slice{});
  if (s.arch == Arch::gpt) emb.add("pos.weight", s.max_seq, s.hidden, InitKind::normal);
  p.modules.push_back(emb.m);
  for (std::int64_t i = 0; i < s.layers; ++i) p.modules.push_back(block_module(s, i, tp, ep));
  ModuleBuilder fn;
  fn.m.name = "final_norm";
  fn.add_norm("final_norm", s);
  p.modules.push_back(fn.m);
  ModuleBuilder head;
  head.m.name = "head";
  if (!s.tied_embeddings)
    head.add("head.weight", s.vocab, s.hidden, InitKind::normal, split ? Slice{even_rows(s.vocab, tp)} : Slice{});
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
