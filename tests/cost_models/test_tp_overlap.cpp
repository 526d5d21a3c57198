// Tests for Transformer Engine's userbuffers overlap (cost_models/tp_overlap.h): the default method per
// GEMM read from TE's initialize_ub, and the pair times against hand-computed chunk schedules.
#include <doctest/doctest.h>

#include "cost_models/tp_overlap.h"

namespace fsdpx {
namespace {

TEST_CASE("tp overlap: TE's default method per block GEMM and collective") {
  const auto qkv = te_default_overlap("qkv", Collective::all_gather);
  REQUIRE(qkv.has_value());
  CHECK(qkv->method == TpOverlapMethod::ring_exchange);
  CHECK(qkv->comm_sms == 1);
  const auto proj = te_default_overlap("attn_out", Collective::reduce_scatter);
  REQUIRE(proj.has_value());
  CHECK(proj->method == TpOverlapMethod::pipeline);
  CHECK(proj->splits == 4);
  CHECK(proj->comm_sms == 16);
  CHECK(te_default_overlap("mlp_down_dx", Collective::all_gather)->method == TpOverlapMethod::ring_exchange);
  CHECK(te_default_overlap("mlp_up_dw", Collective::reduce_scatter)->method == TpOverlapMethod::bulk);
  // No overlap for a GEMM TE does not pair with that collective, nor for the head or the attention core.
  CHECK_FALSE(te_default_overlap("qkv", Collective::reduce_scatter).has_value());
  CHECK_FALSE(te_default_overlap("lm_head", Collective::all_gather).has_value());
  CHECK_FALSE(te_default_overlap("attn_core", Collective::all_gather).has_value());
}

TEST_CASE("tp overlap: pair times follow the chunk schedules") {
  // Ring exchange over 4 chunks of 1 ms GEMM with 0.5 ms transfers, no SM taken: 3 steps of 1 ms + 1 ms.
  CHECK(overlapped_pair_time_s(TpOverlapMethod::ring_exchange, 1.0, 0.5, 4, 0.0) == doctest::Approx(4.0));
  // Transfers longer than the chunk GEMM: 3 steps of 2 ms + the last chunk's 1 ms.
  CHECK(overlapped_pair_time_s(TpOverlapMethod::ring_exchange, 1.0, 2.0, 4, 0.0) == doctest::Approx(7.0));
  // Pipeline: first chunk alone, 3 steps, the last reduce-scatter alone; the GEMM loses a quarter of the
  // SMs while each 0.4 ms reduce-scatter runs: a step is 1 + 0.25 * 0.4 ms.
  CHECK(overlapped_pair_time_s(TpOverlapMethod::pipeline, 1.0, 0.4, 4, 0.25) == doctest::Approx(1.0 + 3 * 1.1 + 0.4));
  // Bulk: the longer of the two when the collective covers the slowed GEMM.
  CHECK(overlapped_pair_time_s(TpOverlapMethod::bulk, 1.0, 3.0, 1, 0.25) == doctest::Approx(3.0));
  // Overlap never costs more than running the two one after the other, and never less than either.
  for (double comm : {0.0, 0.1, 1.0, 10.0}) {
    for (TpOverlapMethod m : {TpOverlapMethod::ring_exchange, TpOverlapMethod::pipeline, TpOverlapMethod::bulk}) {
      const int chunks = m == TpOverlapMethod::bulk ? 1 : 4;
      const double t = overlapped_pair_time_s(m, 1.0, comm, chunks, 16.0 / 132);
      CHECK(t <= chunks * 1.0 + chunks * comm + 1e-12);
      CHECK(t >= chunks * 1.0 - 1e-12);
    }
  }
}

}  // namespace
}  // namespace fsdpx
