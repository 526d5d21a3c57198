// executor/model/moe_exchange.cpp — the dispatch plan of routed rows over the ep group (see
// moe_exchange.h).
#include "executor/model/moe_exchange.h"

#include "core/errors.h"
#include "executor/model/vector_index.h"

namespace fsdpx {
namespace {

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

template void moe_plan_dispatch<float>(const MoeDims&, MoeRoutes<float>&, ExpertExchange*);
template void moe_plan_dispatch<double>(const MoeDims&, MoeRoutes<double>&, ExpertExchange*);

}  // namespace fsdpx
