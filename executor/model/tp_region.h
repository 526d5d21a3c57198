// executor/model/tp_region.h — Megatron-LM's conjugate operators around a tensor-parallel region of
// [N, width] activations (Shoeybi et al. 2019 §3, Fig. 3): f before the column-parallel GEMM
// (identity forward, all-reduce backward) and g after the row-parallel GEMM (all-reduce forward,
// identity backward). With sequence parallelism the tokens outside the region are split across the tp
// ranks (rank r: rows [r·N_local, (r+1)·N_local)), f is an all-gather (backward: reduce-scatter) and g a
// reduce-scatter (backward: all-gather) (Korthikanti et al. 2022 §4.2.2). With tp = 1 every operator
// does nothing. Written once over the model's communicator, so both backends run it: the CPU's
// ModelComm (host buffers) and the CUDA backend's CudaModelComm (device buffers on its stream), each
// with all_gather, reduce_scatter, all_reduce by ModelAxis and a copy. Leaves out overlapping the
// collectives with the GEMMs.
#pragma once

#include <cstdint>

#include "executor/model/model_parallel.h"

namespace fsdpx {

template <class Comm>
struct TpRegionT {
  ModelParallel par;
  Comm* comm = nullptr;
  std::int64_t n = 0;        // tokens inside the region
  std::int64_t n_local = 0;  // tokens outside it on this rank (n / tp with sequence parallelism, else n)
  std::int64_t width = 0;

  // First row of this rank's tokens inside an [N, width] buffer.
  std::int64_t local_row() const { return par.sp() ? par.tp_rank * n_local : 0; }

  // f forward: buf [N, width] holds this rank's rows at local_row(); on return, every row.
  template <class Real>
  void enter(Real* buf) const {
    if (!par.sp()) return;
    const std::int64_t count = n_local * width;
    comm->all_gather(ModelAxis::tp, buf + par.tp_rank * count, buf, count);
  }
  // f backward: dbuf [N, width] holds this rank's partial gradient; on return the rows at local_row()
  // (every row without sequence parallelism) hold the sum over the tp ranks. The reduce-scatter runs in
  // place (NCCL's convention: out = in + rank·count).
  template <class Real>
  void enter_backward(Real* dbuf) const {
    if (par.tp == 1) return;
    if (!par.sp()) return comm->all_reduce(ModelAxis::tp, dbuf, n * width);
    const std::int64_t count = n_local * width;
    comm->reduce_scatter(ModelAxis::tp, dbuf, dbuf + par.tp_rank * count, count);
  }
  // g forward: partial [N, width], this rank's part of the row-parallel GEMM -> out [N_local, width],
  // the sum over the tp ranks (out may be partial without sequence parallelism).
  template <class Real>
  void exit(Real* partial, Real* out) const {
    if (par.sp()) return comm->reduce_scatter(ModelAxis::tp, partial, out, n_local * width);
    if (par.tp > 1) comm->all_reduce(ModelAxis::tp, partial, n * width);
    if (out != partial) comm->copy(partial, out, n * width);
  }
  // g backward: dout [N_local, width] -> the gradient of the region's output [N, width]: dout itself
  // without sequence parallelism, else gathered into dfull.
  template <class Real>
  const Real* exit_backward(const Real* dout, Real* dfull) const {
    if (!par.sp()) return dout;
    comm->all_gather(ModelAxis::tp, dout, dfull, n_local * width);
    return dfull;
  }
};

using TpRegion = TpRegionT<ModelComm>;

}  // namespace fsdpx
