// executor/runtime/param_layout.h — where every parameter lives. Each plan module ("embedding",
// "block.<i>", "final_norm", "head"; core/plan.h module_names) owns one flat contiguous buffer holding
// its tensors back to back; the full model is the modules concatenated in forward order. An FSDP
// unit's flat buffer is the concatenation of its modules' buffers, zero-padded to a multiple of
// dp_shard (FlatUnitLayout; FSDP's FlatParameter, Zhao et al. 2023, arXiv 2304.11277 §3.2.1).
// Gradients use the identical layout. Under tensor parallelism each rank's layout holds its slices of
// the full tensors (Megatron-LM, Shoeybi et al. 2019 §3): every TensorSlot says where its slice lies in the full tensor, so init, checkpoints and weight
// files address elements of the full model. Leaves out vocabulary padding (vocab must divide by tp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx {

// How a tensor is initialised (executor/model/init.h).
enum class InitKind { normal, normal_residual, ones, zeros };

struct TensorSlot {
  std::string name;         // "qkv.weight", "mlp_down.bias", "tok.weight", ...
  std::int64_t offset = 0;  // elements from the start of the module buffer
  std::int64_t rows = 0, cols = 1;
  InitKind init = InitKind::normal;
  // The slice of the full tensor this rank holds (tensor parallelism; the whole tensor when tp = 1):
  // local row i is full row full_rows[i] (i itself when empty), local column j is full column
  // col_offset + j of full_cols; the full tensor starts at full_offset of the full module buffer.
  std::int64_t full_offset = 0, full_cols = 1, col_offset = 0;
  std::vector<std::int64_t> full_rows;
  bool tp_replicated = true;  // the whole tensor on every tp rank (norms, positions, row-parallel biases)
  // A routed experts' tensor (an MoE block's tail): under expert parallelism its rows are the rank's local
  // experts', and FSDP shards it over the experts' own group (efsdp) rather than dp_shard.
  bool expert = false;
  // A buffer, not a parameter (DeepSeek-V3's router.e_score_correction_bias, a registered buffer in
  // transformers' DeepseekV3TopkRouter): in the state and checkpoints, but the optimizer never steps it,
  // so weight decay leaves a loaded value as it is (executor/model/optimizer_ranges.h).
  bool buffer = false;
  std::int64_t numel() const { return rows * cols; }
  // Element of the full module buffer that local element `e` (0 <= e < numel) of this tensor is.
  std::int64_t full_element(std::int64_t e) const;
};

struct ModuleLayout {
  std::string name;
  std::int64_t offset = 0;  // elements from the start of the full-model buffer
  std::int64_t numel = 0;
  std::int64_t full_numel = 0;  // of the module in the full model (= numel when tp = 1)
  std::vector<TensorSlot> tensors;
  // Element of the full module buffer that local element `e` is.
  std::int64_t full_element(std::int64_t e) const;
  // The tensor called `name`, or nullptr when this module has none (e.g. biases of a llama block).
  const TensorSlot* find(const std::string& name) const;
};

struct ParamLayout {
  std::vector<ModuleLayout> modules;  // forward order
  std::int64_t total = 0;
  std::int64_t layers = 0;

  static int embedding_index() { return 0; }
  int block_index(std::int64_t i) const { return static_cast<int>(1 + i); }
  int final_norm_index() const { return static_cast<int>(layers + 1); }
  int head_index() const { return static_cast<int>(layers + 2); }
  int num_modules() const { return static_cast<int>(modules.size()); }
  // Index of the module called `name`; FSDP_CHECK fails for an unknown name.
  int index_of(const std::string& name) const;
};

// One rank's place in the tensor-parallel group.
struct TpSlice {
  int ranks = 1, rank = 0;
};
// One rank's place in the expert-parallel group: it holds experts [rank·E/ranks, (rank+1)·E/ranks).
struct EpSlice {
  int ranks = 1, rank = 0;
};

// Layout from the ModelSpec sizes; module sizes equal cost_models count_params (tested). With tp > 1,
// rank `tp.rank`'s slices: column-parallel qkv (its query heads and KV heads) and mlp_up (gate and up
// rows), row-parallel attn_out and mlp_down (their input columns), vocab-parallel token table and head
// (rows); norms, positions and row-parallel biases whole. With kv_heads < tp the qkv rows are split
// evenly in Megatron's group-interleaved order ([group][its query heads, K, V]; qkv_rows_of_rank).
// FSDP_CHECKs that tp divides heads, ffn_hidden, vocab and kv_heads or is a multiple of kv_heads. With
// ep > 1, an MoE block's experts' tensors hold rank `ep.rank`'s local experts (their rows, full_rows
// saying which); FSDP_CHECKs that ep divides the experts.
ParamLayout make_param_layout(const ModelSpec& m, TpSlice tp = {}, EpSlice ep = {});

// Full rows of the fused qkv weight [Q + 2·KV, C] that tp rank `rank` holds, in its local order.
std::vector<std::int64_t> qkv_rows_of_rank(const ModelSpec& m, TpSlice tp);

// A flat FSDP-unit buffer: its modules back to back, then zero padding so that
// padded_numel = shard_numel · dp_shard. Rank r owns [r·shard_numel, (r+1)·shard_numel).
struct FlatUnitLayout {
  std::vector<int> modules;                  // module indices, forward order
  std::vector<std::int64_t> module_offsets;  // element offset of each module inside the unit
  std::int64_t numel = 0;                    // unpadded
  std::int64_t padded_numel = 0;
  std::int64_t shard_numel = 0;
};
FlatUnitLayout make_flat_unit(const ParamLayout& layout, const std::vector<std::string>& module_names, int dp_shard);

}  // namespace fsdpx
