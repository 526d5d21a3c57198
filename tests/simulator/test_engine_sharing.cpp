// tests/simulator/test_engine_sharing.cpp — the engine's fluid sharing, checked against hand-computed
// timelines: concurrent collectives on one fabric split its bandwidth (latency is not shared), on
// different fabrics they do not; compute slows by the share of SMs the resident collective kernels hold
// (one SM per NCCL channel, NCCL's ncclDevKernel runs one thread block per channel).
#include <doctest/doctest.h>

#include <cmath>

#include "simulator/engine.h"
#include "tests/simulator/program_builder.h"

namespace fsdpx {
namespace {

using test::ProgramBuilder;

TimeNs end_of(const EngineResult& r, int op) {
  for (const OpTiming& t : r.ops)
    if (t.op == op) return t.end_ns;
  FAIL("op not found");
  return -1;
}

TEST_CASE("two collectives on the same fabric take twice as long in their bandwidth phase") {
  for (const bool nic : {false, true}) {
    CAPTURE(nic);
    ProgramBuilder b;
    const int ag = b.collective("ag", OpKind::all_gather, 10e-6, 2e-6, nic);
    const int rs = b.collective("rs", OpKind::reduce_scatter, 10e-6, 2e-6, nic);
    const EngineResult r = run_engine(b.program(), EngineOptions{});
    // 2 us latency each (concurrent, not shared), then 8 us of work each at rate 1/2.
    CHECK(end_of(r, ag) == 2000 + 2 * 8000);
    CHECK(end_of(r, rs) == 2000 + 2 * 8000);
  }
}

TEST_CASE("collectives on different fabrics do not share") {
  ProgramBuilder b;
  const int ag = b.collective("ag", OpKind::all_gather, 10e-6, 2e-6, false);
  const int rs = b.collective("rs", OpKind::reduce_scatter, 10e-6, 2e-6, true);
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  CHECK(end_of(r, ag) == 10000);
  CHECK(end_of(r, rs) == 10000);
}

TEST_CASE("unequal collectives: the short one ends, the long one speeds up") {
  ProgramBuilder b;
  const int ag = b.collective("ag", OpKind::all_gather, 10e-6, 2e-6, false);  // 8 us of work
  const int rs = b.collective("rs", OpKind::reduce_scatter, 6e-6, 2e-6, false);  // 4 us of work
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  // Both at 1/2 from 2 us: rs's 4 us of work ends at 2 + 8 = 10 us; ag has 4 us left, alone: 14 us.
  CHECK(end_of(r, rs) == 10000);
  CHECK(end_of(r, ag) == 14000);
}

TEST_CASE("a collective's latency phase does not consume the other's bandwidth") {
  ProgramBuilder b;
  const int ag = b.collective("ag", OpKind::all_gather, 10e-6, 0, false);   // 10 us of work from 0
  const int rs = b.collective("rs", OpKind::reduce_scatter, 9e-6, 5e-6, false);  // work from 5 us
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  // ag alone 0..5 us (5 us done); both at 1/2 from 5 us: ag's 5 us left and rs's 4 us; rs ends at
  // 5 + 8 = 13 us with ag at 4 of 5; ag's last 1 us alone: 14 us.
  CHECK(end_of(r, rs) == 13000);
  CHECK(end_of(r, ag) == 14000);
}

// Two collectives with their SM shares: one on NVLink, one on the NICs (either may be absent).
struct InterferenceCase {
  double nvlink_share, nic_share;
  double usage;  // expected compute slowdown: the sum of the resident kernels' shares
};

TEST_CASE("interference slows compute by the SM share of the resident collective kernels") {
  for (const InterferenceCase c : {InterferenceCase{0.15, 0, 0.15}, InterferenceCase{0, 0.05, 0.05},
                                   InterferenceCase{0.15, 0.05, 0.20}}) {
    CAPTURE(c.usage);
    ProgramBuilder b;
    const int fwd = b.compute("fwd", OpKind::forward, 100e-6);
    if (c.nvlink_share > 0) b.collective("ag", OpKind::all_gather, 20e-6, 0, false, {}, 0, c.nvlink_share);
    if (c.nic_share > 0) b.collective("rs", OpKind::reduce_scatter, 20e-6, 0, true, {}, 0, c.nic_share);
    const EngineResult r = run_engine(b.program(), EngineOptions{});
    // 20 us at rate (1 - u) does 20 (1 - u) us of the 100 us; the rest at full rate.
    const double expected_ns = 20000 + (100000 - 20000 * (1 - c.usage));
    CHECK(std::abs(static_cast<double>(end_of(r, fwd)) - expected_ns) <= 1.0);
  }
}

TEST_CASE("interference: a collective holds its SMs in its latency phase too; off is a no-op") {
  ProgramBuilder b;
  const int fwd = b.compute("fwd", OpKind::forward, 100e-6);
  b.collective("ag", OpKind::all_gather, 30e-6, 10e-6, false, {}, 0, 0.5);  // resident 0..30 us
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  CHECK(end_of(r, fwd) == 100000 + 15000);  // 30 us at rate 1/2 lose 15 us
  EngineOptions off;
  off.interference = false;
  CHECK(end_of(run_engine(b.program(), off), fwd) == 100000);
}

TEST_CASE("collectives sharing a fabric also slow compute for as long as either is resident") {
  ProgramBuilder b;
  const int fwd = b.compute("fwd", OpKind::forward, 100e-6);
  b.collective("ag", OpKind::all_gather, 10e-6, 0, false, {}, 0, 0.125);
  b.collective("rs", OpKind::reduce_scatter, 10e-6, 0, false, {}, 0, 0.125);
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  // The two share NVLink: both end at 20 us; compute runs at 0.75 for 20 us (5 us lost).
  CHECK(end_of(r, 1) == 20000);
  CHECK(end_of(r, fwd) == 105000);
}

TEST_CASE("collectives holding every SM stall compute until one of them ends") {
  ProgramBuilder b;
  const int fwd = b.compute("fwd", OpKind::forward, 100e-6);
  b.collective("ag", OpKind::all_gather, 10e-6, 0, false, {}, 0, 0.5);
  b.collective("rs", OpKind::reduce_scatter, 30e-6, 0, true, {}, 0, 0.5);
  const EngineResult r = run_engine(b.program(), EngineOptions{});
  // 0..10 us: no progress; 10..30 us at 1/2 (10 us done); then 90 us alone: 120 us.
  CHECK(end_of(r, fwd) == 120000);
}

}  // namespace
}  // namespace fsdpx
