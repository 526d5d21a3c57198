// executor/model/model_parallel.h — the collectives a rank's modules issue in its tensor- and
// context-parallel groups (executor/runtime/model_groups.h), and the tokens it holds. Tensor
// parallelism follows Megatron-LM (Shoeybi et al. 2019 §3): a column-parallel GEMM's input enters the
// parallel region (operator f: identity forward, all-reduce backward) and a row-parallel GEMM's
// partial output leaves it (operator g: all-reduce forward, identity backward); with sequence
// parallelism (Korthikanti et al. 2022 §4.2.2) the tokens outside those regions are split across the
// tp ranks, f becomes an all-gather (its backward a reduce-scatter) and g a reduce-scatter (its
// backward an all-gather). Context parallelism splits each sequence into 2·cp chunks, rank r holding
// chunks r and 2cp−1−r (the load-balanced causal assignment of Megatron-Core and torchtitan). Every
// collective is recorded (group, kind, bytes) so the runtime can check it against the step program's
// serial collectives, and timed for profiles. Expert parallelism's token dispatch and combine are
// variable-count all-to-alls on the ep group (all_to_all.h), recorded likewise. The groups and the
// record are model_comm_base.h's, shared with the CUDA model's. Leaves out overlapping the collectives
// with compute.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "executor/comm/communicator.h"
#include "executor/model/context_positions.h"
#include "executor/model/expert_exchange.h"
#include "executor/model/model_comm_base.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/model_groups.h"

namespace fsdpx {

// The model's tensor- and context-parallel communicators (null when that degree is 1).
class ModelComm final : public ExpertExchange, public ModelCommBase<Communicator> {
 public:
  ModelComm(Communicator* tp, Communicator* cp, OpProfiler* profiler)
      : ModelCommBase("ModelComm"), profiler_(profiler) {
    set_groups(tp, cp);
  }

  // As Communicator's, over the group of `axis`, recorded and timed.
  template <class Real>
  void all_gather(ModelAxis axis, const Real* in, Real* out, std::int64_t count);
  template <class Real>
  void reduce_scatter(ModelAxis axis, const Real* in, Real* out, std::int64_t count);
  template <class Real>
  void all_reduce(ModelAxis axis, Real* buf, std::int64_t count);
  // The ep group's variable-count all-to-all (rows of `width` elements; counts in rows, rank order);
  // recorded with S = the larger of the bytes sent and received.
  template <class Real>
  void all_to_allv(ModelAxis axis, const Real* in, const std::vector<std::int64_t>& send_rows, Real* out,
                   const std::vector<std::int64_t>& recv_rows, std::int64_t width);
  // The metadata before a variable-count all-to-all: `per_rank` counts to each rank of the axis's group,
  // in [size·per_rank] -> out [size·per_rank]. Not recorded: the step program's S counts the payload.
  void exchange_counts(ModelAxis axis, const double* in, double* out, std::int64_t per_rank);
  // The MoE MLP's exchange (expert_exchange.h): the calls above on the ep group.
  void exchange_counts(const double* in, double* out, std::int64_t per_rank) override {
    exchange_counts(ModelAxis::ep, in, out, per_rank);
  }
  void all_to_allv(const float* in, const std::vector<std::int64_t>& send_rows, float* out,
                   const std::vector<std::int64_t>& recv_rows, std::int64_t width) override {
    all_to_allv(ModelAxis::ep, in, send_rows, out, recv_rows, width);
  }
  void all_to_allv(const double* in, const std::vector<std::int64_t>& send_rows, double* out,
                   const std::vector<std::int64_t>& recv_rows, std::int64_t width) override {
    all_to_allv(ModelAxis::ep, in, send_rows, out, recv_rows, width);
  }
  // A host copy (tp_region.h's g without sequence parallelism when its output is another buffer).
  template <class Real>
  void copy(const Real* in, Real* out, std::int64_t count) const { std::copy(in, in + count, out); }

 private:
  void record(ModelAxis axis, Collective kind, double bytes, double time_s);  // and timed

  OpProfiler* profiler_;
};

}  // namespace fsdpx
