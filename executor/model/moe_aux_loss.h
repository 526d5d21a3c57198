// executor/model/moe_aux_loss.h — the load-balancing auxiliary loss of a mixture-of-experts model as Hugging
// Face's load_balancing_loss_func (transformers, models/mixtral/modeling_mixtral.py; Switch Transformer,
// Fedus et al. 2021, arXiv:2101.03961 §2.2, equations 4-6) over the router outputs of every MoE block of one
// micro-batch concatenated: aux = E · Σ_e f_e · P_e, f_e = (tokens routed to e, each of its k picks counted)
// / T, P_e = Σ probs[., e] / T, T = MoE blocks × tokens; the model's loss adds coef · aux
// (MixtralForCausalLM: router_aux_loss_coef). f is a count, so only P carries a gradient.
// Under sigmoid scoring (DeepSeek-V3) the loss is DeepSeek-V3's complementary sequence-wise balance loss
// (DeepSeek-V3 technical report, arXiv:2412.19437 §2.1.2, eq. 17-20): per MoE block and sequence of T tokens
// alpha · Σ_e f_e P_e, f_e = E / (k T) · (tokens of the sequence routed to e), P_e = the mean over the
// sequence of s_e / Σ_j s_j (sigmoid scores normalised over all experts); the mean over the micro-batch's
// sequences and the sum over the blocks (as DeepSeek-V2's MoEGate with seq_aux, whose loss each block adds,
// deepseek-ai/DeepSeek-V2 modeling_deepseek.py). Each block computes its own statistics and gradient
// (moe_mlp.cpp record_balance); this class sums the values and hands the blocks dloss · alpha. DeepSeek-V3's
// auxiliary-loss-free balancing (§2.1.2: after each step the correction bias of an overloaded expert
// decreases by gamma, an underloaded one's increases) is left out: the bias stays at its initial value
// (zeros for a seeded init), so training selects by the scores alone, as gamma = 0. Leaves out attention
// masks (every token counts).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/moe_dims.h"

namespace fsdpx {

template <class Real>
class MoeAuxLoss {
 public:
  // Starts a micro-batch: clears the statistics (experts 0 or coefficient 0: loss() stays 0).
  void reset(const ModelSpec& m);
  // After an MoE block's forward (not its recompute): adds its counts and probability sums (sigmoid
  // scoring: its sequence-wise balance value).
  void add(const MoeRoutes<Real>& a, std::int64_t tokens);
  // coef · aux of the blocks added so far.
  Real loss() const;
  // d (dloss · coef · aux) / d probs[n, e] of every block: dloss · coef · E · count_e / T², the same for every
  // token and block; null when there is no aux loss.
  void begin_backward(Real dloss);
  // What the blocks' backward reads: the softmax loss's dprob (null: none) or dloss · alpha (sigmoid).
  MoeAuxGrad<Real> grad() const { return {dprob_.empty() ? nullptr : dprob_.data(), seq_scale_}; }

 private:
  double coef_ = 0;
  bool sequence_wise_ = false;  // sigmoid scoring: DeepSeek-V3's loss
  double seq_sum_ = 0;          // Σ over blocks of their seq_balance
  Real seq_scale_ = 0;
  std::int64_t experts_ = 0, rows_ = 0;  // rows_ = T
  std::vector<double> count_, prob_sum_;  // [E]
  std::vector<Real> dprob_;               // [E]
};

extern template class MoeAuxLoss<float>;
extern template class MoeAuxLoss<double>;

}  // namespace fsdpx
