// executor/model/model_comm_base.h — what both model communicators share (the CPU's ModelComm,
// model_parallel.h; the CUDA model's CudaModelComm, cuda_backend/cuda_model_comm.h): the rank's tensor-,
// context- and expert-parallel groups by ModelAxis, the record of every collective issued there (group,
// kind, the step program's bytes: runtime/model_groups.h), which the runtime checks against the
// program's serial collectives, and an all-to-all's row counts turned into element counts. Leaves out
// the transports (host or device communicators), the bytes per element and timing (the CPU's profiler).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/runtime/model_groups.h"

namespace fsdpx {

template <class Comm>
class ModelCommBase {
 public:
  ModelCommBase(const ModelCommBase&) = delete;  // the models keep a pointer
  ModelCommBase& operator=(const ModelCommBase&) = delete;

  // The groups, once they exist (a backend splits them off its world after constructing its models).
  void set_groups(Comm* tp, Comm* cp) { tp_ = tp, cp_ = cp; }
  void set_ep_group(Comm* ep) { ep_ = ep; }
  // The collectives issued since the last call, in order.
  std::vector<IssuedCollective> take_issued() { return std::exchange(issued_, {}); }

 protected:
  explicit ModelCommBase(const char* who) : who_(who) {}
  ~ModelCommBase() = default;

  Comm& group(ModelAxis axis) const {
    Comm* c = axis == ModelAxis::tp ? tp_ : axis == ModelAxis::cp ? cp_ : ep_;
    FSDP_CHECK(c != nullptr, fmt::format("{}: no {} communicator", who_, model_axis_name(axis)));
    return *c;
  }
  void record(ModelAxis axis, Collective kind, double bytes) { issued_.push_back(IssuedCollective{axis, kind, bytes}); }
  // Per-rank counts of rows `width` elements wide -> element counts, in place; returns the elements of
  // the larger side, sent or received (the step program's S of an all-to-all).
  static std::int64_t rows_to_elems(std::vector<std::int64_t>& send, std::vector<std::int64_t>& recv,
                                    std::int64_t width) {
    std::int64_t sent = 0, received = 0;
    for (std::int64_t& n : send) sent += n, n *= width;
    for (std::int64_t& n : recv) received += n, n *= width;
    return std::max(sent, received) * width;
  }

 private:
  const char* who_;
  Comm* tp_ = nullptr;
  Comm* cp_ = nullptr;
  Comm* ep_ = nullptr;
  std::vector<IssuedCollective> issued_;
};

}  // namespace fsdpx
