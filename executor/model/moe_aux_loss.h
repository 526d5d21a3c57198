// executor/model/moe_aux_loss.h — the load-balancing auxiliary loss of a mixture-of-experts model as Hugging
// Face's load_balancing_loss_func (transformers, models/mixtral/modeling_mixtral.py; Switch Transformer,
// Fedus et al. 2021, arXiv:2101.03961 §2.2, equations 4-6) over the router outputs of every MoE block of one
// micro-batch concatenated: aux = E · Σ_e f_e · P_e, f_e = (tokens routed to e, each of its k picks counted)
// / T, P_e = Σ probs[., e] / T, T = MoE blocks × tokens; the model's loss adds coef · aux
// (MixtralForCausalLM: router_aux_loss_coef). f is a count, so only P carries a gradient. Leaves out
// attention masks (every token counts) and DeepSeek's sequence-wise and aux-loss-free balancing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/moe_mlp.h"

namespace fsdpx {

template <class Real>
class MoeAuxLoss {
 public:
  // Starts a micro-batch: clears the statistics (experts 0 or coefficient 0: loss() stays 0).
  void reset(const ModelSpec& m);
  // After an MoE block's forward (not its recompute): adds its counts and probability sums.
  void add(const MoeActs<Real>& a, std::int64_t tokens);
  // coef · aux of the blocks added so far.
  Real loss() const;
  // d (dloss · coef · aux) / d probs[n, e] of every block: dloss · coef · E · count_e / T², the same for every
  // token and block; null when there is no aux loss.
  void begin_backward(Real dloss);
  const Real* dprob() const { return dprob_.empty() ? nullptr : dprob_.data(); }

 private:
  double coef_ = 0;
  std::int64_t experts_ = 0, rows_ = 0;  // rows_ = T
  std::vector<double> count_, prob_sum_;  // [E]
  std::vector<Real> dprob_;               // [E]
};

extern template class MoeAuxLoss<float>;
extern template class MoeAuxLoss<double>;

}  // namespace fsdpx
