// tests/cuda/test_cuda_norm.cpp — CUDA LayerNorm/RMSNorm (bf16, fp32 statistics) against the CPU fp32
// kernels on the same bf16-representable inputs, forward and backward (+= into non-zero gradients), on
// every path of the backward kernel: 16-byte packs (C % 8 == 0, aligned) and single elements (C % 8 != 0,
// or tensors one element off 16 bytes); one row per chunk (N ≤ 1024) and several, with a short last chunk
// and empty ones (N = 2500); one pack per thread, a part of the block, and several per thread; weight
// sums in shared memory (under and over the 48 KiB default) and, for rows too wide for it, in the scratch;
// and a frozen weight (dinp only).
#include <doctest/doctest.h>

#include <cmath>

#include "executor/cpu/norm.h"
#include "executor/cuda/norm.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

constexpr float kEps = 1e-5f;

struct NormShape {
  std::int64_t n, c;
  bool layer;
  std::int64_t offset = 0;  // elements before each 16-bit tensor (1: not 16-byte aligned)
  bool frozen = false;      // no weight gradient
};

// A bf16 tensor placed `offset` elements into its buffer.
struct Placed {
  DeviceBuffer<bf16> buf;
  std::int64_t offset;
  Placed(const std::vector<float>& x, std::int64_t off) : buf(x.size() + off), offset(off) {
    std::vector<float> padded(off, 0.0f);
    padded.insert(padded.end(), x.begin(), x.end());
    upload_bf16(buf, padded);
  }
  bf16* get() { return buf.get() + offset; }
  std::vector<float> download() const {
    const std::vector<float> all = download_bf16(buf);
    return std::vector<float>(all.begin() + offset, all.end());
  }
};

void check_norm(const NormShape& sh) {
  const std::int64_t n = sh.n, c = sh.c;
  CAPTURE(n);
  CAPTURE(c);
  CAPTURE(sh.layer);
  CAPTURE(sh.offset);
  CAPTURE(sh.frozen);
  const std::vector<float> inp = random_bf16(n * c, -2.0f, 2.0f), weight = random_bf16(c, 0.5f, 1.5f),
                           bias = random_bf16(c), dout = random_bf16(n * c), dinp0 = random_bf16(n * c),
                           dw0 = random_bf16(c), db0 = random_bf16(c);
  // CPU reference (fp32).
  std::vector<float> out(n * c), mean(n), rstd(n), dinp = dinp0, dw = dw0, db = db0;
  float* dw_ref = sh.frozen ? nullptr : dw.data();
  if (sh.layer) {
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), n, c, kEps);
    cpu::layernorm_backward(dinp.data(), dw_ref, sh.frozen ? nullptr : db.data(), dout.data(), inp.data(),
                            weight.data(), mean.data(), rstd.data(), n, c);
  } else {
    cpu::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), n, c, kEps);
    cpu::rmsnorm_backward(dinp.data(), dw_ref, dout.data(), inp.data(), weight.data(), rstd.data(), n, c);
  }
  // CUDA.
  Placed d_inp(inp, sh.offset), d_w(weight, sh.offset), d_b(bias, sh.offset), d_out(out, sh.offset),
      d_dout(dout, sh.offset), d_dinp(dinp0, sh.offset);
  DeviceBuffer<float> d_mean(n), d_rstd(n), d_dw(c), d_db(c), d_scratch(norm_backward_scratch_elems(n, c));
  upload(d_dw, dw0), upload(d_db, db0);
  float* gw = sh.frozen ? nullptr : d_dw.get();
  if (sh.layer) {
    layernorm_forward(d_out.get(), d_mean.get(), d_rstd.get(), d_inp.get(), d_w.get(), d_b.get(), n, c, kEps, nullptr);
    layernorm_backward(d_dinp.get(), gw, sh.frozen ? nullptr : d_db.get(), d_scratch.get(), d_dout.get(), d_inp.get(),
                       d_w.get(), d_mean.get(), d_rstd.get(), n, c, nullptr);
  } else {
    rmsnorm_forward(d_out.get(), d_rstd.get(), d_inp.get(), d_w.get(), n, c, kEps, nullptr);
    rmsnorm_backward(d_dinp.get(), gw, d_scratch.get(), d_dout.get(), d_inp.get(), d_w.get(), d_rstd.get(), n, c,
                     nullptr);
  }
  CHECK(close("norm out", d_out.download(), out, 1e-2, kBf16Rtol));
  CHECK(close("norm rstd", download(d_rstd), rstd, 0, 1e-5));
  if (sh.layer) CHECK(close("norm mean", download(d_mean), mean, 1e-6, 1e-5));
  CHECK(close("norm dinp", d_dinp.download(), dinp, 2e-2, kBf16Rtol));
  // dweight sums N products in fp32 in a different order than the CPU: fp32-level tolerance growing with N.
  const double atol = 1e-6 * double(std::max<std::int64_t>(n, 100));
  CHECK(close("norm dweight", download(d_dw), dw, atol, 1e-4));  // frozen: untouched, still dw0
  if (sh.layer) CHECK(close("norm dbias", download(d_db), db, atol, 1e-4));
}

// Every path for LayerNorm (layer) and RMSNorm.
void check_norm_paths(bool layer) {
  check_norm({77, 300, layer});         // single elements (300 % 8 != 0), one row per chunk
  check_norm({77, 2048, layer});        // packs, one per thread
  check_norm({2500, 264, layer});       // packs on 33 of 256 threads; 3 rows per chunk, last short, 190 empty
  check_norm({1100, 4104, layer});      // 513 packs: three rounds for thread 0; 2 rows per chunk
  check_norm({77, 256, layer, 1});      // C % 8 == 0 but one element off 16 bytes: single elements
  check_norm({3, layer ? 8192 : 16384, layer});   // 64 KiB of shared sums: above the 48 KiB default (opt-in)
  check_norm({3, layer ? 12296 : 24584, layer});  // 4·C·(2 or 1) bytes > 96 KiB: sums in the scratch
  check_norm({77, 264, layer, 0, true});  // frozen weight: dinp only
}

TEST_CASE("cuda layernorm forward/backward match the CPU reference") { check_norm_paths(true); }

TEST_CASE("cuda rmsnorm forward/backward match the CPU reference") { check_norm_paths(false); }

// Two backward runs give the same bits, on the packed and the single-element path.
void check_deterministic(std::int64_t n, std::int64_t c) {
  CAPTURE(n);
  CAPTURE(c);
  const std::vector<float> inp = random_bf16(n * c, -2.0f, 2.0f), weight = random_bf16(c, 0.5f, 1.5f),
                           bias = random_bf16(c), dout = random_bf16(n * c);
  DeviceBuffer<bf16> d_inp(n * c), d_w(c), d_b(c), d_dout(n * c), d_dinp(n * c), d_out(n * c);
  DeviceBuffer<float> d_mean(n), d_rstd(n), d_dw(c), d_db(c), d_scratch(norm_backward_scratch_elems(n, c));
  upload_bf16(d_inp, inp), upload_bf16(d_w, weight), upload_bf16(d_b, bias), upload_bf16(d_dout, dout);
  for (const bool layer : {false, true}) {
    CAPTURE(layer);
    if (layer)
      layernorm_forward(d_out.get(), d_mean.get(), d_rstd.get(), d_inp.get(), d_w.get(), d_b.get(), n, c, kEps,
                        nullptr);
    else
      rmsnorm_forward(d_out.get(), d_rstd.get(), d_inp.get(), d_w.get(), n, c, kEps, nullptr);
    std::vector<float> first_dw, first_db, first_dinp;
    for (int run = 0; run < 2; ++run) {
      upload(d_dw, std::vector<float>(c, 0.0f)), upload(d_db, std::vector<float>(c, 0.0f));
      upload_bf16(d_dinp, std::vector<float>(n * c, 0.0f));
      if (layer)
        layernorm_backward(d_dinp.get(), d_dw.get(), d_db.get(), d_scratch.get(), d_dout.get(), d_inp.get(), d_w.get(),
                           d_mean.get(), d_rstd.get(), n, c, nullptr);
      else
        rmsnorm_backward(d_dinp.get(), d_dw.get(), d_scratch.get(), d_dout.get(), d_inp.get(), d_w.get(), d_rstd.get(),
                         n, c, nullptr);
      if (run == 0) {
        first_dw = download(d_dw), first_db = download(d_db), first_dinp = download_bf16(d_dinp);
      } else {
        CHECK(first_dw == download(d_dw));
        if (layer) CHECK(first_db == download(d_db));
        CHECK(first_dinp == download_bf16(d_dinp));
      }
    }
  }
}

TEST_CASE("cuda norm backward is bitwise deterministic") {
  check_deterministic(77, 300);
  check_deterministic(2500, 264);
}

}  // namespace
}  // namespace fsdpx::cuda::test
