// executor/model/expert_exchange.h — what the shared MoE MLP (moe_mlp.h, moe_exchange.h) asks of a
// backend under expert parallelism: the per-expert row counts to every ep rank, then the routed rows
// themselves, a variable-count all-to-all over the ep group (torchtitan's all_to_all_single pair,
// torchtitan/distributed/expert_parallel.py). The CPU's is ModelComm (model_parallel.h: host
// communicators); the CUDA backend's moves the rows over its device communicator
// (DeviceExpertExchange in executor/cuda_backend/cuda_moe_mlp.cpp). Each records its all-to-alls for the
// contract check.
// Leaves out overlapping the exchange with compute.
#pragma once

#include <cstdint>
#include <vector>

namespace fsdpx {

class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  // in [ep·per_rank] -> out [ep·per_rank]: chunk q of this rank's counts lands as chunk r of rank q's.
  // Metadata: not recorded (the step program's bytes count the payload).
  virtual void exchange_counts(const double* in, double* out, std::int64_t per_rank) = 0;
  // Rows of `width` elements: send_rows[q] to ep rank q, back to back in rank order in `in`; recv_rows[q]
  // from rank q into `out`, likewise. Recorded as one all-to-all of the ep group.
  virtual void all_to_allv(const float* in, const std::vector<std::int64_t>& send_rows, float* out,
                           const std::vector<std::int64_t>& recv_rows, std::int64_t width) = 0;
  virtual void all_to_allv(const double* in, const std::vector<std::int64_t>& send_rows, double* out,
                           const std::vector<std::int64_t>& recv_rows, std::int64_t width) = 0;
};

}  // namespace fsdpx
