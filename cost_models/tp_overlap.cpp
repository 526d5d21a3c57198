// cost_models/tp_overlap.cpp — Transformer Engine's default userbuffers overlap (tp_overlap.h), read
// from NVIDIA/TransformerEngine transformer_engine/pytorch/module/base.py (initialize_ub, v1.11): the
// methods per GEMM, num_sm (1 for ring_exchange, which moves data with the copy engine, 16 otherwise)
// and num_splits (4 for pipeline, the tp degree for ring_exchange).
#include "cost_models/tp_overlap.h"

#include <array>

#include "core/errors.h"

namespace fsdpx {

namespace {

struct Pairing {
  const char* gemm;  // fsdpx's kernel name (cost_models/compute_block.cpp)
  Collective kind;
  TpOverlapMethod method;
};

// TE's names: qkv_fprop and fc1_fprop all-gather the sequence-parallel input chunk by chunk
// (ring_exchange); proj_fprop and fc2_fprop reduce-scatter the output in chunks (pipeline);
// proj_dgrad and fc2_dgrad all-gather the output gradient (ring_exchange); qkv_wgrad and fc1_wgrad
// reduce-scatter the input gradient while the weight-gradient GEMM runs (bulk).
constexpr std::array<Pairing, 8> kTeDefaults{{
    {"qkv", Collective::all_gather, TpOverlapMethod::ring_exchange},
    {"mlp_up", Collective::all_gather, TpOverlapMethod::ring_exchange},
    {"attn_out", Collective::reduce_scatter, TpOverlapMethod::pipeline},
    {"mlp_down", Collective::reduce_scatter, TpOverlapMethod::pipeline},
    {"attn_out_dx", Collective::all_gather, TpOverlapMethod::ring_exchange},
    {"mlp_down_dx", Collective::all_gather, TpOverlapMethod::ring_exchange},
    {"qkv_dw", Collective::reduce_scatter, TpOverlapMethod::bulk},
    {"mlp_up_dw", Collective::reduce_scatter, TpOverlapMethod::bulk},
}};

constexpr int kRingExchangeSms = 1;
constexpr int kOtherSms = 16;
constexpr int kPipelineSplits = 4;

// One chunk of GEMM beside one chunk of communication: the GEMM needs `gemm_s` at full rate and runs
// at (1 - share) of it while the communication kernel holds its SMs.
double step_s(double gemm_s, double comm_s, double share) {
  if (comm_s * (1 - share) >= gemm_s) return comm_s;
  return gemm_s + share * comm_s;
}

}  // namespace

std::optional<TpOverlap> te_default_overlap(const std::string& gemm, Collective kind) {
  for (const Pairing& p : kTeDefaults) {
    if (gemm != p.gemm || kind != p.kind) continue;
    TpOverlap o;
    o.method = p.method;
    o.comm_sms = p.method == TpOverlapMethod::ring_exchange ? kRingExchangeSms : kOtherSms;
    o.splits = p.method == TpOverlapMethod::pipeline ? kPipelineSplits : 0;
    return o;
  }
  return std::nullopt;
}

// ring_exchange: chunk i computes while chunk i + 1 arrives, so chunks - 1 steps then the last chunk.
// pipeline: the first chunk alone, then each chunk beside the previous chunk's reduce-scatter, then the
// last reduce-scatter alone. bulk: one step.
double overlapped_pair_time_s(TpOverlapMethod method, double gemm_chunk_s, double comm_chunk_s, int chunks,
                              double comm_sm_share) {
  FSDP_CHECK(chunks >= 1 && gemm_chunk_s >= 0 && comm_chunk_s >= 0 && comm_sm_share >= 0 && comm_sm_share < 1,
             "overlapped_pair_time_s: bad arguments");
  const double step = step_s(gemm_chunk_s, comm_chunk_s, comm_sm_share);
  switch (method) {
    case TpOverlapMethod::ring_exchange: return (chunks - 1) * step + gemm_chunk_s;
    case TpOverlapMethod::pipeline: return gemm_chunk_s + (chunks - 1) * step + comm_chunk_s;
    case TpOverlapMethod::bulk: return step;
  }
  return gemm_chunk_s * chunks + comm_chunk_s * chunks;
}

}  // namespace fsdpx
