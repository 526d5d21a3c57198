// executor/model/moe_exchange.cpp — dispatch and combine of routed rows over the ep group (see
// moe_exchange.h).
#include "executor/model/moe_exchange.h"

#include "core/errors.h"

namespace fsdpx {
namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// ep 1: one chunk per expert with rows, over the rank's own expert-major rows.
template <class Real>
void local_chunks(const MoeDims& d, MoeRoutes<Real>& a) {
  a.chunks.clear();
  for (std::int64_t ex = 0; ex < d.e; ++ex) {
    const std::int64_t r0 = a.first_row[at(ex)], n = a.first_row[at(ex + 1)] - r0;
    if (n > 0) a.chunks.push_back({ex, r0, n});
  }
  a.send_rows.assign(1, d.rows()), a.recv_rows.assign(1, d.rows());
}

// ep > 1: rank q holds experts [q·L, (q+1)·L), so the expert-major rows for rank q are one run. The counts
// to each rank's local experts travel first; the received rows are source 0's (by local expert), then
// source 1's, ...
template <class Real>
void exchanged_chunks(const MoeDims& d, MoeRoutes<Real>& a, ExpertExchange& comm) {
  const std::int64_t local = d.local_experts();
  std::vector<double> mine(at(d.e)), theirs(at(d.e));
  for (std::int64_t ex = 0; ex < d.e; ++ex) mine[at(ex)] = double(a.first_row[at(ex + 1)] - a.first_row[at(ex)]);
  comm.exchange_counts(mine.data(), theirs.data(), local);
  a.send_rows.assign(at(d.ep), 0), a.recv_rows.assign(at(d.ep), 0), a.chunks.clear();
  std::int64_t r0 = 0;
  for (int q = 0; q < d.ep; ++q)
    for (std::int64_t j = 0; j < local; ++j) {
      const auto n = std::int64_t(theirs[at(q * local + j)]);
      a.send_rows[at(q)] += std::int64_t(mine[at(q * local + j)]);
      a.recv_rows[at(q)] += n;
      if (n > 0) a.chunks.push_back({j, r0, n});
      r0 += n;
    }
}

}  // namespace

template <class Real>
void moe_plan_dispatch(const MoeDims& d, MoeRoutes<Real>& r, ExpertExchange* comm) {
  if (d.ep == 1) return local_chunks(d, r);
  FSDP_CHECK(comm != nullptr && d.e % d.ep == 0, "moe_dispatch: expert parallelism needs the ep group");
  exchanged_chunks(d, r, *comm);
}

template <class Real>
void moe_dispatch(const MoeDims& d, MoeActs<Real>& a, ExpertExchange* comm) {
  moe_plan_dispatch(d, a, comm);
  if (d.ep == 1) return;
  a.ex_x.resize(at(a.expert_rows() * d.c));
  comm->all_to_allv(a.xr.data(), a.send_rows, a.ex_x.data(), a.recv_rows, d.c);
}

template <class Real>
void moe_combine(const MoeDims& d, MoeActs<Real>& a, ExpertExchange* comm) {
  FSDP_CHECK(d.ep > 1 && comm != nullptr, "moe_combine: only under expert parallelism");
  comm->all_to_allv(a.ex_y.data(), a.recv_rows, a.y.data(), a.send_rows, d.c);
}

template <class Real>
void moe_dispatch_grads(const MoeDims& d, const MoeActs<Real>& a, const Real* dy, Real* ex_dy, ExpertExchange* comm) {
  FSDP_CHECK(d.ep > 1 && comm != nullptr, "moe_dispatch_grads: only under expert parallelism");
  comm->all_to_allv(dy, a.send_rows, ex_dy, a.recv_rows, d.c);
}

template <class Real>
void moe_combine_grads(const MoeDims& d, const MoeActs<Real>& a, const Real* ex_dx, Real* dxr, ExpertExchange* comm) {
  FSDP_CHECK(d.ep > 1 && comm != nullptr, "moe_combine_grads: only under expert parallelism");
  comm->all_to_allv(ex_dx, a.recv_rows, dxr, a.send_rows, d.c);
}

#define FSDPX_INSTANTIATE(Real)                                                                          \
  template void moe_plan_dispatch<Real>(const MoeDims&, MoeRoutes<Real>&, ExpertExchange*);                  \
  template void moe_dispatch<Real>(const MoeDims&, MoeActs<Real>&, ExpertExchange*);                          \
  template void moe_combine<Real>(const MoeDims&, MoeActs<Real>&, ExpertExchange*);                           \
  template void moe_dispatch_grads<Real>(const MoeDims&, const MoeActs<Real>&, const Real*, Real*, ExpertExchange*); \
  template void moe_combine_grads<Real>(const MoeDims&, const MoeActs<Real>&, const Real*, Real*, ExpertExchange*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
