// executor/cpu/embedding.h — token embedding lookup plus optional learned positions (GPT-2's wte and
// wpe; llm.c encoder_forward/backward). Backward scatters into the token table serially in token
// order, so repeated tokens add up in a fixed order (llm.c makes its GPU encoder backward
// deterministic for the same reason). Leaves out vocabulary padding and ignore-index tokens.
#pragma once

#include <cstdint>

namespace fsdpx::cpu {

// out [B, T, C] = wte [V, C][tokens [B, T]] + wpe [maxT, C][t] (wpe may be null: no positions).
template <class Real>
void embedding_forward(Real* out, const std::int32_t* tokens, const Real* wte, const Real* wpe, std::int64_t b,
                       std::int64_t t, std::int64_t c, std::int64_t vocab);

// dwte [V, C] += scatter of dout [B, T, C] by token; dwpe [maxT, C] += Σ_b dout[b, t] (dwpe may be null).
template <class Real>
void embedding_backward(Real* dwte, Real* dwpe, const Real* dout, const std::int32_t* tokens, std::int64_t b,
                        std::int64_t t, std::int64_t c);

}  // namespace fsdpx::cpu
