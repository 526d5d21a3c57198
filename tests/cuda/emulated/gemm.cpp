// tests/cuda/emulated/gemm.cpp — the executor/cuda/gemm.h interface on the emulated runtime, in place of
// cuBLASLt: the column-major product C [m, n] = (accumulate ? C : 0) + alpha·op(A)·op(B) + bias [m], with
// fp32 accumulation and one rounding to C's type, runs on the stream as the CPU reference GEMM
// (cpu::gemm_serial) of its row-major transpose, Cᵀ = op(B)ᵀ·op(A)ᵀ; the three linear-layer wrappers
// (executor/cuda/gemm.h, shared with the cuBLASLt build) map onto it, so the CPU model's calls come out identical.
// Leaves out the heuristic and its search (the mode is kept, unused), the workspace's use and alignment limits
// (gpu_check.sh tests those on a GPU).
#include "executor/cuda/gemm.h"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "executor/cpu/gemm.h"
#include "executor/cuda/cuda_check.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

GemmContext::GemmContext(GemmAlgoMode mode) : algo_mode_(mode) { CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes)); }
GemmContext::~GemmContext() {
  if (workspace_) CUDA_CHECK(cudaFree(workspace_));
}

namespace {
// Elements a column-major matrix of `cols` columns of `rows` each at leading dimension ld spans.
std::int64_t span(std::int64_t rows, std::int64_t cols, std::int64_t ld) { return ld * (cols - 1) + rows; }

// Reads the m×n elements of C (column-major, ldc) into fc.
template <class In>
void start(std::vector<float>& fc, const void* c, std::int64_t m, std::int64_t n, std::int64_t ldc) {
  const In* in = static_cast<const In*>(c);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) fc[std::size_t(j * ldc + i)] = emu::to_f32(in[j * ldc + i]);
}

// Writes the m×n elements of C (column-major, ldc; the rows between ldc and m belong to someone else).
template <class Out>
void finish(void* c, std::int64_t m, std::int64_t n, std::int64_t ldc, const std::vector<float>& result) {
  Out* out = static_cast<Out*>(c);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) out[j * ldc + i] = emu::from_f32<Out>(result[std::size_t(j * ldc + i)]);
}
}  // namespace

template <class T>
void gemm_col_major(GemmContext&, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    const T* a, std::int64_t lda, const no_deduce_t<T>* b, std::int64_t ldb, void* c, GemmOut c_type,
                    std::int64_t ldc, bool accumulate, const no_deduce_t<T>* bias, cudaStream_t stream, float alpha) {
  FSDP_CHECK(m > 0 && n > 0 && k > 0, fmt::format("gemm: empty shape m={} n={} k={}", m, n, k));
  emu::enqueue(stream, [=] {
    const auto fa = emu::load(a, trans_a ? span(k, m, lda) : span(m, k, lda));
    const auto fb = emu::load(b, trans_b ? span(n, k, ldb) : span(k, n, ldb));
    const std::int64_t c_elems = span(m, n, ldc);
    // Read only with accumulate (beta 0 ignores C, as cuBLAS: it may hold garbage).
    std::vector<float> fc(std::size_t(c_elems), 0.0f);
    if (accumulate && c_type == GemmOut::f32) start<float>(fc, c, m, n, ldc);
    else if (accumulate) start<T>(fc, c, m, n, ldc);
    // Row-major Cᵀ [n, m] (ld ldc) = op(B)ᵀ [n, k] · op(A)ᵀ [k, m]: stored B is row-major op(B)ᵀ untransposed
    // unless trans_b, and likewise A.
    cpu::gemm_serial<float>(trans_b, trans_a, n, m, k, alpha, fb.data(), ldb, fa.data(), lda,
                            accumulate ? 1.0f : 0.0f, fc.data(), ldc);
    if (bias)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) fc[std::size_t(j * ldc + i)] += emu::to_f32(bias[i]);
    if (c_type == GemmOut::f32) finish<float>(c, m, n, ldc, fc);
    else finish<T>(c, m, n, ldc, fc);
  });
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void gemm_col_major<T>(GemmContext&, bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*,   \
                                  std::int64_t, const T*, std::int64_t, void*, GemmOut, std::int64_t, bool,       \
                                  const T*, cudaStream_t, float);
FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
