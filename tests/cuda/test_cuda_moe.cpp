// tests/cuda/test_cuda_moe.cpp — the MoE row kernels (executor/cuda/moe.h) on bf16 rows against the CPU MoE
// MLP's loops (executor/model/moe_mlp.cpp: each token's rows summed in expert order with their weights; a
// routed row's output gradient weight · dout and the weight's gradient dout · y) written out here on the
// same inputs: within bf16 output rounding (fp32 dweight: within fp32 summation order). Random routing,
// rows listed ascending per token as the CUDA MoE MLP lists them. Runs on a GPU (test_cuda) and on the
// emulated runtime (test_cuda_emulated, its twins in emulated/kernels_moe.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "executor/cuda/moe.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

constexpr std::int64_t kN = 37, kK = 3, kC = 72, kRows = kN * kK;

// A random dropless routing: a permutation of the N·k rows dealt out k per token, each token's ascending.
std::vector<std::int32_t> random_rows() {
  std::vector<std::int32_t> rows(static_cast<std::size_t>(kRows));
  std::iota(rows.begin(), rows.end(), 0);
  std::shuffle(rows.begin(), rows.end(), rng());
  for (std::int64_t i = 0; i < kN; ++i) std::sort(rows.begin() + i * kK, rows.begin() + (i + 1) * kK);
  return rows;
}

TEST_CASE("cuda moe: the weighted combine and its unweighted gather-sum follow the CPU's expert-order sum") {
  const std::vector<std::int32_t> rows = random_rows();
  const std::vector<float> y = random_bf16(std::size_t(kRows * kC), -2.0f, 2.0f);
  const std::vector<float> w = random_bf16(std::size_t(kRows), 0.0f, 1.0f);
  const std::vector<float> prior = random_bf16(std::size_t(kN * kC));
  DeviceBuffer<bf16> d_y(y.size()), d_out(prior.size());
  DeviceBuffer<std::int32_t> d_rows(rows.size());
  DeviceBuffer<float> d_w(w.size());
  upload_bf16(d_y, y), upload(d_rows, rows), upload(d_w, w);
  for (const bool weighted : {true, false})
    for (const bool accumulate : {false, true}) {
      CAPTURE(weighted);
      CAPTURE(accumulate);
      upload_bf16(d_out, prior);
      moe_combine_rows(d_out.get(), static_cast<const bf16*>(d_y.get()), d_rows.get(), weighted ? d_w.get() : nullptr,
                       kN, kK, kC, accumulate, nullptr);
      std::vector<float> want(prior.size());
      for (std::int64_t i = 0; i < kN; ++i)
        for (std::int64_t j = 0; j < kC; ++j) {
          float acc = accumulate ? prior[std::size_t(i * kC + j)] : 0.0f;
          for (std::int64_t s = 0; s < kK; ++s) {
            const std::size_t slot = std::size_t(i * kK + s);
            acc += (weighted ? w[slot] : 1.0f) * y[std::size_t(rows[slot] * kC + j)];
          }
          want[std::size_t(i * kC + j)] = acc;
        }
      CHECK(close("moe combine", download_bf16(d_out), want, 1e-6, kBf16Rtol));
    }
}

TEST_CASE("cuda moe: routed output gradients and the combine weights' gradient follow the CPU") {
  const std::vector<std::int32_t> rows = random_rows();
  std::vector<std::int32_t> slot_of_row(static_cast<std::size_t>(kRows));
  for (std::int64_t slot = 0; slot < kRows; ++slot) slot_of_row[std::size_t(rows[std::size_t(slot)])] = std::int32_t(slot);
  const std::vector<float> dout = random_bf16(std::size_t(kN * kC)), y = random_bf16(std::size_t(kRows * kC));
  const std::vector<float> w = random_bf16(std::size_t(kRows), 0.0f, 1.0f);
  DeviceBuffer<bf16> d_dout(dout.size()), d_y(y.size()), d_dy(y.size());
  DeviceBuffer<std::int32_t> d_slot(slot_of_row.size());
  DeviceBuffer<float> d_w(w.size()), d_dw(w.size());
  upload_bf16(d_dout, dout), upload_bf16(d_y, y), upload(d_slot, slot_of_row), upload(d_w, w);
  moe_routed_grads(d_dy.get(), d_dw.get(), static_cast<const bf16*>(d_dout.get()), static_cast<const bf16*>(d_y.get()),
                   d_slot.get(), d_w.get(), kRows, kK, kC, nullptr);
  std::vector<float> dy(y.size()), dw(w.size());
  for (std::int64_t r = 0; r < kRows; ++r) {
    const std::int64_t slot = slot_of_row[std::size_t(r)], i = slot / kK;
    float dot = 0.0f;
    for (std::int64_t j = 0; j < kC; ++j) {
      dy[std::size_t(r * kC + j)] = w[std::size_t(slot)] * dout[std::size_t(i * kC + j)];
      dot += dout[std::size_t(i * kC + j)] * y[std::size_t(r * kC + j)];
    }
    dw[std::size_t(slot)] = dot;
  }
  CHECK(close("moe routed dy", download_bf16(d_dy), dy, 1e-6, kBf16Rtol));
  CHECK(close("moe dweight", download(d_dw), dw, 1e-5, 1e-5));
}

}  // namespace
}  // namespace fsdpx::cuda::test
