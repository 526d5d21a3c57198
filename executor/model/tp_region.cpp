// executor/model/tp_region.cpp — f and g as collectives of the tp group (see tp_region.h). The
// reduce-scatter of f's backward runs in place (NCCL's convention: out = in + rank·count).
#include "executor/model/tp_region.h"

#include <algorithm>

namespace fsdpx {

template <class Real>
void TpRegion::enter(Real* buf) const {
  if (!par.sp()) return;
  const std::int64_t count = n_local * width;
  comm->all_gather(ModelAxis::tp, buf + par.tp_rank * count, buf, count);
}

template <class Real>
void TpRegion::enter_backward(Real* dbuf) const {
  if (par.tp == 1) return;
  if (!par.sp()) return comm->all_reduce(ModelAxis::tp, dbuf, n * width);
  const std::int64_t count = n_local * width;
  comm->reduce_scatter(ModelAxis::tp, dbuf, dbuf + par.tp_rank * count, count);
}

template <class Real>
void TpRegion::exit(Real* partial, Real* out) const {
  if (par.sp()) return comm->reduce_scatter(ModelAxis::tp, partial, out, n_local * width);
  if (par.tp > 1) comm->all_reduce(ModelAxis::tp, partial, n * width);
  if (out != partial) std::copy(partial, partial + n * width, out);
}

template <class Real>
const Real* TpRegion::exit_backward(const Real* dout, Real* dfull) const {
  if (!par.sp()) return dout;
  comm->all_gather(ModelAxis::tp, dout, dfull, n_local * width);
  return dfull;
}

#define FSDPX_INSTANTIATE(Real)                                                       \
  template void TpRegion::enter<Real>(Real*) const;                                   \
  template void TpRegion::enter_backward<Real>(Real*) const;                          \
  template void TpRegion::exit<Real>(Real*, Real*) const;                             \
  template const Real* TpRegion::exit_backward<Real>(const Real*, Real*) const;
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
