// executor/model/model_parallel.cpp — the recorded collectives of the model (see model_parallel.h).
#include "executor/model/model_parallel.h"

#include <chrono>

#include "executor/comm/all_to_all.h"

namespace fsdpx {

void ModelComm::record(ModelAxis axis, Collective kind, double bytes, double time_s) {
  ModelCommBase::record(axis, kind, bytes);
  if (profiler_) profiler_->record_collective(collective_profile_name(axis, kind, bytes), time_s);
}

namespace {
// Runs `collective` and returns its wall seconds.
template <class F>
double timed_s(F&& collective) {
  const auto start = std::chrono::steady_clock::now();
  collective();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

template <class Real>
void ModelComm::all_gather(ModelAxis axis, const Real* in, Real* out, std::int64_t count) {
  Communicator& c = group(axis);
  const double time_s = timed_s([&] { c.all_gather(in, out, count); });
  record(axis, Collective::all_gather, double(count) * c.size() * sizeof(Real), time_s);
}

template <class Real>
void ModelComm::reduce_scatter(ModelAxis axis, const Real* in, Real* out, std::int64_t count) {
  Communicator& c = group(axis);
  const double time_s = timed_s([&] { c.reduce_scatter(in, out, count); });
  record(axis, Collective::reduce_scatter, double(count) * c.size() * sizeof(Real), time_s);
}

template <class Real>
void ModelComm::all_reduce(ModelAxis axis, Real* buf, std::int64_t count) {
  Communicator& c = group(axis);
  const double time_s = timed_s([&] { c.all_reduce(buf, count); });
  record(axis, Collective::all_reduce, double(count) * sizeof(Real), time_s);
}

namespace {
constexpr int kExpertTag = 31;  // the ep group's all-to-alls (a group of its own: no other stream shares it)
}

template <class Real>
void ModelComm::all_to_allv(ModelAxis axis, const Real* in, const std::vector<std::int64_t>& send_rows, Real* out,
                            const std::vector<std::int64_t>& recv_rows, std::int64_t width) {
  Communicator& c = group(axis);
  std::vector<std::int64_t> send(send_rows), recv(recv_rows);
  const std::int64_t elems = rows_to_elems(send, recv, width);
  const double time_s = timed_s([&] { fsdpx::all_to_allv(c, in, send, out, recv, kExpertTag); });
  record(axis, Collective::all_to_all, double(elems) * sizeof(Real), time_s);
}

void ModelComm::exchange_counts(ModelAxis axis, const double* in, double* out, std::int64_t per_rank) {
  fsdpx::all_to_all(group(axis), in, out, per_rank, kExpertTag);
}

#define FSDPX_INSTANTIATE(Real)                                                                    \
  template void ModelComm::all_gather<Real>(ModelAxis, const Real*, Real*, std::int64_t);         \
  template void ModelComm::reduce_scatter<Real>(ModelAxis, const Real*, Real*, std::int64_t);     \
  template void ModelComm::all_reduce<Real>(ModelAxis, Real*, std::int64_t);                      \
  template void ModelComm::all_to_allv<Real>(ModelAxis, const Real*, const std::vector<std::int64_t>&, Real*, \
                                             const std::vector<std::int64_t>&, std::int64_t);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
