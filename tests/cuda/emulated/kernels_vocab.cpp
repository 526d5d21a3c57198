// tests/cuda/emulated/kernels_vocab.cpp — host launchers of executor/cuda/vocab_parallel.h for the emulated
// runtime: each enqueues on its stream and there runs the CPU reference (executor/model/vocab_parallel.h)
// in fp32 between loads and stores in the element type (elem.h). Leaves out the device kernels' own
// summation orders (the CPU reference's are used).
#include <cstdint>
#include <vector>

#include "executor/cuda/vocab_parallel.h"
#include "executor/model/vocab_parallel.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;
using emu::load;
using emu::store;

template <class T>
void vocab_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, std::int64_t v_first,
                             std::int64_t v_local, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  enqueue(stream, [=] {
    std::vector<float> o(std::size_t(n * c));
    const auto w = load(wte, v_local * c);
    fsdpx::vocab_embedding_forward<float>(o.data(), tokens, w.data(), v_first, v_local, n, c);
    store(out, o);
  });
}

template <class T>
void vocab_embedding_backward(float* dwte, const T* dout, const std::int32_t* tokens, std::int64_t v_first,
                              std::int64_t v_local, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  enqueue(stream, [=] {
    const auto dy = load(dout, n * c);
    fsdpx::vocab_embedding_backward<float>(dwte, dy.data(), tokens, v_first, v_local, n, c);
  });
}

template <class T>
void vocab_ce_stats(float* stats, const T* logits, const std::int32_t* targets, std::int64_t n, std::int64_t v_local,
                    std::int64_t v_first, cudaStream_t stream) {
  enqueue(stream, [=] {
    const auto z = load(logits, n * v_local);
    fsdpx::vocab_ce_stats<float>(stats, z.data(), targets, n, v_local, v_first);
  });
}

void vocab_ce_loss(float* loss, const float* all_stats, int ranks, std::int64_t n, float tokens, cudaStream_t stream) {
  enqueue(stream, [=] {
    float none = 0;  // no logits to turn into probabilities: the sum of lse − target logit only
    *loss = fsdpx::vocab_ce_probs<float>(&none, all_stats, ranks, n, 0) / tokens;
  });
}

template <class T>
void vocab_ce_backward(T* logits_to_dlogits, const float* all_stats, const std::int32_t* targets, int ranks,
                       std::int64_t n, std::int64_t v_local, std::int64_t v_first, float scale, cudaStream_t stream) {
  enqueue(stream, [=] {
    auto z = load(logits_to_dlogits, n * v_local);
    fsdpx::vocab_ce_probs<float>(z.data(), all_stats, ranks, n, v_local);
    fsdpx::vocab_ce_backward<float>(z.data(), targets, n, v_local, v_first, scale);
    store(logits_to_dlogits, z);
  });
}

FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_VOCAB_PARALLEL_INSTANTIATE)

}  // namespace fsdpx::cuda
