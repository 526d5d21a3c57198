// executor/model/moe_aux_loss.cpp — the load-balancing loss and its gradient (see moe_aux_loss.h).
#include "executor/model/moe_aux_loss.h"

#include <algorithm>

namespace fsdpx {

template <class Real>
void MoeAuxLoss<Real>::reset(const ModelSpec& m) {
  coef_ = m.is_moe() ? m.moe.aux_loss_coef : 0.0;
  experts_ = m.moe.experts;
  rows_ = 0;
  sequence_wise_ = m.is_moe() && m.moe.scoring == RouterScoring::sigmoid;
  seq_sum_ = 0, seq_scale_ = 0;
  count_.assign(static_cast<std::size_t>(experts_), 0.0), prob_sum_.assign(count_.size(), 0.0);
  dprob_.clear();
}

template <class Real>
void MoeAuxLoss<Real>::add(const MoeRoutes<Real>& a, std::int64_t tokens) {
  rows_ += tokens;
  seq_sum_ += double(a.seq_balance);
  for (std::size_t e = 0; e < count_.size(); ++e) count_[e] += double(a.count[e]), prob_sum_[e] += double(a.prob_sum[e]);
}

template <class Real>
Real MoeAuxLoss<Real>::loss() const {
  if (coef_ == 0 || rows_ == 0) return Real(0);
  if (sequence_wise_) return Real(coef_ * seq_sum_);
  double sum = 0;
  const double t = double(rows_);
  for (std::size_t e = 0; e < count_.size(); ++e) sum += (count_[e] / t) * (prob_sum_[e] / t);
  return Real(coef_ * double(experts_) * sum);
}

template <class Real>
void MoeAuxLoss<Real>::begin_backward(Real dloss) {
  dprob_.clear();
  seq_scale_ = 0;
  if (coef_ == 0 || rows_ == 0) return;
  if (sequence_wise_) {
    seq_scale_ = Real(double(dloss) * coef_);
    return;
  }
  const double t = double(rows_);
  for (double c : count_) dprob_.push_back(Real(double(dloss) * coef_ * double(experts_) * c / (t * t)));
}

template class MoeAuxLoss<float>;
template class MoeAuxLoss<double>;

}  // namespace fsdpx
