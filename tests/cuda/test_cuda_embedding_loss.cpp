// tests/cuda/test_cuda_embedding_loss.cpp — CUDA embedding forward/backward (with repeated tokens,
// learned positions, bucketed deterministic backward) and the fused classifier (loss, in-place dlogits,
// padded vocabulary) against the CPU reference kernels.
#include <doctest/doctest.h>

#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/cuda/cross_entropy.h"
#include "executor/cuda/embedding.h"
#include "executor/cuda/embedding_buckets.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

std::vector<std::int32_t> random_tokens(std::int64_t n, std::int64_t vocab) {
  std::uniform_int_distribution<std::int32_t> u(0, std::int32_t(vocab - 1));
  std::vector<std::int32_t> x(n);
  for (auto& v : x) v = u(rng());
  return x;
}

TEST_CASE("embedding buckets keep token order inside each bucket") {
  const std::vector<std::int32_t> tokens{3, 1, 3, 0, 3, 1};
  const EmbeddingBuckets bk = make_embedding_buckets(tokens.data(), 6, 5);
  CHECK(bk.rows == std::vector<std::int32_t>{0, 1, 3});
  CHECK(bk.offsets == std::vector<std::int32_t>{0, 1, 3, 6});
  CHECK(bk.positions == std::vector<std::int32_t>{3, 1, 5, 0, 2, 4});
}

TEST_CASE("cuda embedding forward/backward match the CPU reference and are deterministic") {
  const std::int64_t b = 3, t = 29, c = 200, vocab = 50;  // 87 tokens over 50 ids: many repeats
  const auto tokens = random_tokens(b * t, vocab);
  const std::vector<float> wte = random_bf16(vocab * c), wpe = random_bf16(t * c), dout = random_bf16(b * t * c);
  const std::vector<float> dwte0 = random_bf16(vocab * c), dwpe0 = random_bf16(t * c);
  std::vector<float> out(b * t * c), dwte = dwte0, dwpe = dwpe0;
  cpu::embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, vocab);
  cpu::embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c);

  const EmbeddingBuckets bk = make_embedding_buckets(tokens.data(), b * t, vocab);
  DeviceBuffer<std::int32_t> d_tok(b * t), d_rows(bk.rows.size()), d_off(bk.offsets.size()), d_pos(bk.positions.size());
  upload(d_tok, tokens), upload(d_rows, bk.rows), upload(d_off, bk.offsets), upload(d_pos, bk.positions);
  DeviceBuffer<bf16> d_wte(vocab * c), d_wpe(t * c), d_out(b * t * c), d_dout(b * t * c);
  DeviceBuffer<float> d_dwte(vocab * c), d_dwpe(t * c);
  upload_bf16(d_wte, wte), upload_bf16(d_wpe, wpe), upload_bf16(d_dout, dout);
  embedding_forward(d_out.get(), d_tok.get(), d_wte.get(), d_wpe.get(), b, t, c, nullptr);
  CHECK(close("embedding forward", download_bf16(d_out), out, 1e-6, kBf16Rtol));
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    upload(d_dwte, dwte0), upload(d_dwpe, dwpe0);
    embedding_backward(d_dwte.get(), d_dwpe.get(), d_dout.get(), d_rows.get(), d_off.get(), d_pos.get(),
                       std::int64_t(bk.rows.size()), b, t, c, nullptr);
    const std::vector<float> got = download(d_dwte);
    // fp32 sums of the same values; the GPU adds the bucket sum to dwte once, the CPU adds one by one.
    CHECK(close("embedding dwte", got, dwte, 1e-6, 1e-6));
    CHECK(close("embedding dwpe", download(d_dwpe), dwpe, 1e-6, 1e-6));
    if (run == 0) first = got;
    else CHECK(first == got);
  }
}

TEST_CASE("cuda fused classifier matches CPU softmax cross-entropy forward + backward") {
  const std::int64_t n = 23, vocab = 1000, vocab_padded = 1024;
  const float dloss = 0.5f;
  const auto targets = random_tokens(n, vocab);
  const std::vector<float> logits = random_bf16(n * vocab, -4.0f, 4.0f);
  std::vector<float> probs = logits;
  const float loss = cpu::softmax_cross_entropy_forward(probs.data(), targets.data(), n, vocab);
  cpu::softmax_cross_entropy_backward(probs.data(), targets.data(), n, vocab, dloss);
  std::vector<float> padded(n * vocab_padded, 7.0f), dlogits_ref(n * vocab_padded, 0.0f);  // 7: poison
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t v = 0; v < vocab; ++v) {
      padded[i * vocab_padded + v] = logits[i * vocab + v];
      dlogits_ref[i * vocab_padded + v] = probs[i * vocab + v];
    }
  DeviceBuffer<bf16> d_logits(n * vocab_padded);
  DeviceBuffer<float> d_losses(n), d_mean(1);
  DeviceBuffer<std::int32_t> d_targets(n);
  upload_bf16(d_logits, padded), upload(d_targets, targets);
  fused_classifier(d_logits.get(), d_losses.get(), d_mean.get(), d_targets.get(), n, vocab, vocab_padded, dloss, true,
                   nullptr);
  CHECK(close("classifier mean loss", download(d_mean), {loss}, 1e-5, 1e-5));
  // dlogits are O(1/(N·V)) except at the target: absolute tolerance relative to dloss/N.
  CHECK(close("classifier dlogits", download_bf16(d_logits), dlogits_ref, 1e-3 * dloss / n, kBf16Rtol));
  upload_bf16(d_logits, padded);
  fused_classifier(d_logits.get(), d_losses.get(), d_mean.get(), d_targets.get(), n, vocab, vocab_padded, dloss, false,
                   nullptr);
  CHECK(download_bf16(d_logits) == [&] {  // forward-only leaves the logits untouched
    std::vector<float> r(padded);
    for (float& v : r) v = round_bf16(v);
    return r;
  }());
}

}  // namespace
}  // namespace fsdpx::cuda::test
