// executor/model/qkv_groups.cpp — the query-group gather of Megatron's kv_heads < tp path (see
// qkv_groups.h).
#include "executor/model/qkv_groups.h"

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {

std::vector<std::int64_t> query_group_columns(const ModelSpec& m, const ModelParallel& par) {
  FSDP_CHECK(m.kv_heads < par.tp && par.tp % m.kv_heads == 0, "query_group_columns: needs kv_heads < tp");
  const std::int64_t hd = m.head_dim, heads_per_group = m.heads / m.kv_heads;
  const std::int64_t ranks_per_group = par.tp / m.kv_heads, heads_per_rank = m.heads / par.tp;
  const std::int64_t group = par.tp_rank / ranks_per_group;
  const std::int64_t group_first = group * (heads_per_group + 2) * hd;  // the group's first full column
  const std::int64_t first_q = group_first + (par.tp_rank % ranks_per_group) * heads_per_rank * hd;
  std::vector<std::int64_t> cols;
  for (std::int64_t c = 0; c < heads_per_rank * hd; ++c) cols.push_back(first_q + c);
  for (std::int64_t c = 0; c < 2 * hd; ++c) cols.push_back(group_first + heads_per_group * hd + c);  // K, V
  return cols;
}

// Column k of the gathered [N, tp·rows] output lives in rank k / rows's block of `all`.
template <class Real>
void gather_query_group(ModelComm& comm, const std::vector<std::int64_t>& columns, const Real* part, Real* all,
                        Real* out, std::int64_t n, std::int64_t rows) {
  comm.all_gather(ModelAxis::tp, part, all, n * rows);
  const auto width = std::int64_t(columns.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < width; ++j) {
      const std::int64_t k = columns[std::size_t(j)];
      out[i * width + j] = all[(k / rows) * n * rows + i * rows + k % rows];
    }
}

template <class Real>
void gather_query_group_backward(ModelComm& comm, const std::vector<std::int64_t>& columns, const Real* dout,
                                 Real* dall, Real* dpart, std::int64_t n, std::int64_t rows, int tp) {
  std::fill(dall, dall + std::int64_t(tp) * n * rows, Real(0));
  const auto width = std::int64_t(columns.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < width; ++j) {
      const std::int64_t k = columns[std::size_t(j)];
      dall[(k / rows) * n * rows + i * rows + k % rows] = dout[i * width + j];
    }
  comm.reduce_scatter(ModelAxis::tp, dall, dpart, n * rows);
}

#define FSDPX_INSTANTIATE(Real)                                                                                \
  template void gather_query_group<Real>(ModelComm&, const std::vector<std::int64_t>&, const Real*, Real*,     \
                                         Real*, std::int64_t, std::int64_t);                                  \
  template void gather_query_group_backward<Real>(ModelComm&, const std::vector<std::int64_t>&, const Real*,   \
                                                  Real*, Real*, std::int64_t, std::int64_t, int);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
