// cost_models/tp_overlap.h — Transformer Engine's userbuffers overlap of a sequence-parallel TP
// collective with the GEMM beside it (Megatron-LM --tp-comm-overlap, NeMo ub_tp_comm_overlap): which
// GEMM each collective hides behind, by which method, and how long the pair takes. Leaves out fp8
// buffers, atomic GEMMs, user-tuned ub_cfgs (the TE defaults are used) and overlap across nodes.
#pragma once

#include <optional>
#include <string>

#include "core/collective.h"

namespace fsdpx {

enum class TpOverlapMethod {
  ring_exchange,  // the GEMM runs in tp chunks; each chunk's input/output travels peer to peer by copy engine
  pipeline,       // the GEMM runs in num_splits chunks; each chunk's output is reduce-scattered during the next
  bulk,           // one collective runs beside one whole GEMM
};

struct TpOverlap {
  TpOverlapMethod method = TpOverlapMethod::bulk;
  int comm_sms = 16;  // SMs the communication kernel holds while it runs
  int splits = 0;     // GEMM chunks: pipeline's num_splits; ring_exchange uses the tp degree
};

// The overlap TE's initialize_ub configures by default for the block GEMM fsdpx names `gemm` (forward,
// input-gradient and weight-gradient GEMMs of qkv, attn_out, mlp_up, mlp_down) when it is paired with a
// collective of kind `kind`; nullopt where TE overlaps nothing.
std::optional<TpOverlap> te_default_overlap(const std::string& gemm, Collective kind);

// Time of one GEMM and the collective it hides: `gemm_chunk_s` one chunk of the GEMM at full rate,
// `comm_chunk_s` the collective's share per chunk, `chunks` the number of chunks (1 for bulk), and
// `comm_sm_share` the share of the SMs the communication kernel takes from the GEMM while both run.
double overlapped_pair_time_s(TpOverlapMethod method, double gemm_chunk_s, double comm_chunk_s, int chunks,
                              double comm_sm_share);

}  // namespace fsdpx
