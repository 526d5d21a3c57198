// tests/cuda/test_cuda_device_thread_communicator.cpp — the in-process device communicator with 1, 2
// and 4 ranks on one GPU against the host ThreadCommunicator: f32 results bit for bit (all-gather copies,
// rank-order sums), bf16 sums equal to the fp32 rank-order sum rounded once; in place and out of place;
// back-to-back collectives on reused buffers without host syncs; split and dup; point-to-point batches;
// abort, mismatch and timeout end every rank with CommAborted instead of a hang.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "executor/comm/thread_communicator.h"
#include "executor/cuda/device_thread_communicator.h"
#include "tests/cuda/comm_test_util.h"

namespace fsdpx::cuda::test {
namespace {

using Bits = std::uint16_t;  // bf16 bit patterns on the host
using Comms = std::vector<std::unique_ptr<DeviceCommunicator>>;

constexpr std::int64_t kAg = 1000, kRs = 777, kAr = 1001, kBc = 513;

// One thread per rank; a rank that throws aborts the group (run_rank_threads).
void run_device_ranks(Comms& comms, const std::function<void(DeviceCommunicator&)>& body) {
  run_rank_threads(
      static_cast<int>(comms.size()), [&](int r) { body(*comms[static_cast<std::size_t>(r)]); },
      [&](const std::string& msg) { comms[0]->abort(msg); });
}

// Floats with spread exponents, so that a different summation order gives different bits.
std::vector<float> random_f32(std::size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-20, 20);
  std::vector<float> x(n);
  for (float& v : x) v = std::ldexp(u(rng()), e(rng()));
  return x;
}

std::vector<Bits> random_bits(std::size_t n) {
  std::vector<Bits> b;
  for (float v : random_bf16(n, -4.0f, 4.0f)) b.push_back(bf16_bits(v));
  return b;
}

struct Inputs {
  std::vector<float> ag, rs, ar, bc;
  std::vector<Bits> ag16, rs16, ar16;
};
struct Outputs {
  std::vector<float> ag, ag_inplace, rs, rs_inplace, ar, ar_inplace, bc;
  std::vector<Bits> ag16, rs16_inplace, ar16, ar16_inplace;
};

Inputs make_inputs(int n) {
  const auto sn = static_cast<std::size_t>(n);
  return {random_f32(kAg), random_f32(sn * kRs), random_f32(kAr), random_f32(kBc),
          random_bits(kAg), random_bits(sn * kRs), random_bits(kAr)};
}

// bits(round(Σ_j float(x_j[offset + i]))), summed in rank order in fp32.
std::vector<Bits> bf16_rank_sum(const std::vector<Inputs>& in, std::vector<Bits> Inputs::*field, std::int64_t offset,
                                std::int64_t count) {
  std::vector<Bits> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    float acc = bf16_value((in[0].*field)[static_cast<std::size_t>(offset + i)]);
    for (std::size_t j = 1; j < in.size(); ++j) acc += bf16_value((in[j].*field)[static_cast<std::size_t>(offset + i)]);
    out[static_cast<std::size_t>(i)] = bf16_bits(acc);
  }
  return out;
}

// The host ThreadCommunicator's answers (f32) and the rank-order bf16 sums; the last rank is the root.
std::vector<Outputs> host_reference(const std::vector<Inputs>& in) {
  const int n = static_cast<int>(in.size());
  std::vector<Outputs> out(in.size());
  run_ranks(n, [&](Communicator& c) {
    const auto r = static_cast<std::size_t>(c.rank());
    Outputs& o = out[r];
    o.ag.resize(static_cast<std::size_t>(n * kAg));
    c.all_gather(in[r].ag.data(), o.ag.data(), kAg);
    o.rs.resize(kRs);
    c.reduce_scatter(in[r].rs.data(), o.rs.data(), kRs);
    o.ar = in[r].ar;
    c.all_reduce(o.ar.data(), kAr);
    o.bc = c.rank() == n - 1 ? in[r].bc : std::vector<float>(kBc, 0.0f);
    c.broadcast(o.bc.data(), kBc, n - 1);
  });
  for (int r = 0; r < n; ++r) {
    Outputs& o = out[static_cast<std::size_t>(r)];
    o.ag_inplace = o.ag, o.rs_inplace = o.rs, o.ar_inplace = o.ar;
    for (const Inputs& x : in) o.ag16.insert(o.ag16.end(), x.ag16.begin(), x.ag16.end());
    o.rs16_inplace = bf16_rank_sum(in, &Inputs::rs16, r * kRs, kRs);
    o.ar16 = o.ar16_inplace = bf16_rank_sum(in, &Inputs::ar16, 0, kAr);
  }
  return out;
}

// Every collective once on rank c.rank(), on one non-blocking stream; returns what landed in `out`.
Outputs run_collectives(DeviceCommunicator& c, const Inputs& x) {
  const int n = c.size(), r = c.rank();
  const auto sn = static_cast<std::size_t>(n);
  Stream st;
  const cudaStream_t s = st.get();
  Outputs o;
  DeviceBuffer<float> ag_in(kAg), ag_out(sn * kAg), ag_buf(sn * kAg);
  upload_on(ag_in.get(), x.ag, s);
  upload_on(ag_buf.get() + r * kAg, x.ag, s);
  c.all_gather(ag_in.get(), ag_out.get(), kAg, DType::fp32, s, "ag.u0.mb0.fwd");
  c.all_gather(ag_buf.get() + r * kAg, ag_buf.get(), kAg, DType::fp32, s);  // in place
  c.all_gather(ag_in.get(), ag_out.get(), 0, DType::fp32, s);               // empty: a no-op on every rank
  o.ag = download_on<float>(ag_out.get(), sn * kAg, s);
  o.ag_inplace = download_on<float>(ag_buf.get(), sn * kAg, s);

  DeviceBuffer<float> rs_in(sn * kRs), rs_out(kRs), rs_buf(sn * kRs);
  upload_on(rs_in.get(), x.rs, s);
  upload_on(rs_buf.get(), x.rs, s);
  c.reduce_scatter(rs_in.get(), rs_out.get(), kRs, DType::fp32, s, "rs.u0");
  c.reduce_scatter(rs_buf.get(), rs_buf.get() + r * kRs, kRs, DType::fp32, s);  // in place
  o.rs = download_on<float>(rs_out.get(), kRs, s);
  o.rs_inplace = download_on<float>(rs_buf.get() + r * kRs, kRs, s);

  DeviceBuffer<float> ar_in(kAr), ar_out(kAr), ar_buf(kAr), bc(kBc);
  upload_on(ar_in.get(), x.ar, s);
  upload_on(ar_buf.get(), x.ar, s);
  upload_on(bc.get(), r == n - 1 ? x.bc : std::vector<float>(kBc, 0.0f), s);
  c.all_reduce(ar_in.get(), ar_out.get(), kAr, DType::fp32, s);
  c.all_reduce(ar_buf.get(), ar_buf.get(), kAr, DType::fp32, s);  // in place
  c.broadcast(r == n - 1 ? bc.get() : nullptr, bc.get(), kBc, DType::fp32, n - 1, s);
  o.ar = download_on<float>(ar_out.get(), kAr, s);
  o.ar_inplace = download_on<float>(ar_buf.get(), kAr, s);
  o.bc = download_on<float>(bc.get(), kBc, s);

  DeviceBuffer<bf16> ag16_in(kAg), ag16_out(sn * kAg), rs16(sn * kRs), ar16_in(kAr), ar16_out(kAr);
  upload_on(ag16_in.get(), x.ag16, s);
  upload_on(rs16.get(), x.rs16, s);
  upload_on(ar16_in.get(), x.ar16, s);
  c.all_gather(ag16_in.get(), ag16_out.get(), kAg, DType::bf16, s);
  c.reduce_scatter(rs16.get(), rs16.get() + r * kRs, kRs, DType::bf16, s);  // in place
  c.all_reduce(ar16_in.get(), ar16_out.get(), kAr, DType::bf16, s);
  o.ag16 = download_on<Bits>(ag16_out.get(), sn * kAg, s);
  o.rs16_inplace = download_on<Bits>(rs16.get() + r * kRs, kRs, s);
  o.ar16 = download_on<Bits>(ar16_out.get(), kAr, s);
  c.all_reduce(ar16_in.get(), ar16_in.get(), kAr, DType::bf16, s);  // in place
  o.ar16_inplace = download_on<Bits>(ar16_in.get(), kAr, s);
  return o;
}

TEST_CASE("device thread communicator: 1, 2 and 4 ranks match the host thread communicator") {
  for (int n : {1, 2, 4}) {
    CAPTURE(n);
    std::vector<Inputs> in;
    for (int r = 0; r < n; ++r) in.push_back(make_inputs(n));  // drawn here: rng() is not thread-safe
    const std::vector<Outputs> ref = host_reference(in);
    std::vector<Outputs> got(in.size());
    Comms comms = make_device_thread_communicators(n);
    run_device_ranks(comms, [&](DeviceCommunicator& c) {
      got[static_cast<std::size_t>(c.rank())] = run_collectives(c, in[static_cast<std::size_t>(c.rank())]);
    });
    for (std::size_t r = 0; r < in.size(); ++r) {
      CAPTURE(r);
      const Outputs &g = got[r], &e = ref[r];
      CHECK(same_bits("all_gather f32", g.ag, e.ag));
      CHECK(same_bits("all_gather f32 in place", g.ag_inplace, e.ag_inplace));
      CHECK(same_bits("reduce_scatter f32", g.rs, e.rs));
      CHECK(same_bits("reduce_scatter f32 in place", g.rs_inplace, e.rs_inplace));
      CHECK(same_bits("all_reduce f32", g.ar, e.ar));
      CHECK(same_bits("all_reduce f32 in place", g.ar_inplace, e.ar_inplace));
      CHECK(same_bits("broadcast f32", g.bc, e.bc));
      CHECK(same_bits("all_gather bf16", g.ag16, e.ag16));
      CHECK(same_bits("reduce_scatter bf16 in place", g.rs16_inplace, e.rs16_inplace));
      CHECK(same_bits("all_reduce bf16", g.ar16, e.ar16));
      CHECK(same_bits("all_reduce bf16 in place", g.ar16_inplace, e.ar16_inplace));
    }
  }
}

// Exact in fp32 whatever the order: small integers.
float stress_value(int rank, int iter, std::int64_t i) { return float((rank + 1) * 1000 + iter * 10 + i % 7); }

TEST_CASE("device thread communicator: back-to-back collectives reuse their buffers without host syncs") {
  const int n = 4, iters = 4;
  const std::int64_t count = 1 << 20;  // 4 MiB per rank and copy: long enough for a missing wait to show
  Comms comms = make_device_thread_communicators(n);
  std::vector<std::int64_t> wrong(n, -1);
  run_device_ranks(comms, [&](DeviceCommunicator& c) {
    const int r = c.rank();
    Stream st;
    const cudaStream_t s = st.get();
    PinnedBuffer<float> host_in(iters * count), host_sum(iters * count);
    for (int k = 0; k < iters; ++k)
      for (std::int64_t i = 0; i < count; ++i) host_in.get()[k * count + i] = stress_value(r, k, i);
    DeviceBuffer<float> in(count), sum(count), gathered(std::size_t(iters) * n * count);
    for (int k = 0; k < iters; ++k) {  // `in` and `sum` are overwritten while peers may still read them
      CUDA_CHECK(cudaMemcpyAsync(in.get(), host_in.get() + k * count, 4 * count, cudaMemcpyHostToDevice, s));
      CUDA_CHECK(cudaMemcpyAsync(sum.get(), host_in.get() + k * count, 4 * count, cudaMemcpyHostToDevice, s));
      c.all_gather(in.get(), gathered.get() + std::int64_t(k) * n * count, count, DType::fp32, s);
      c.all_reduce(sum.get(), sum.get(), count, DType::fp32, s);
      CUDA_CHECK(cudaMemcpyAsync(host_sum.get() + k * count, sum.get(), 4 * count, cudaMemcpyDeviceToHost, s));
    }
    const std::vector<float> g = download_on<float>(gathered.get(), gathered.size(), s);
    std::int64_t bad = 0;
    for (int k = 0; k < iters; ++k)
      for (std::int64_t i = 0; i < count; ++i) {
        float expect = 0;
        for (int j = 0; j < n; ++j) {
          expect += stress_value(j, k, i);
          bad += g[std::size_t((std::int64_t(k) * n + j) * count + i)] != stress_value(j, k, i);
        }
        bad += host_sum.get()[k * count + i] != expect;
      }
    wrong[static_cast<std::size_t>(r)] = bad;
  });
  for (int r = 0; r < n; ++r) CHECK(wrong[static_cast<std::size_t>(r)] == 0);
}

TEST_CASE("device thread communicator: split into sub-groups, dup for overlapping collectives") {
  const int n = 4;
  Comms comms = make_device_thread_communicators(n);
  struct Seen {
    int sub_rank = -1, sub_size = -1;
    std::string sub_name;
    std::vector<float> sub_sum, gathered, scattered;
  };
  std::vector<Seen> seen(n);
  run_device_ranks(comms, [&](DeviceCommunicator& c) {
    const int r = c.rank();
    Seen& me = seen[static_cast<std::size_t>(r)];
    auto sub = c.split(r % 2, -r, "dp_replicate");  // {0, 2} and {1, 3}; keys reverse the order
    auto second = c.dup("world.rs");
    me.sub_rank = sub->rank(), me.sub_size = sub->size(), me.sub_name = sub->name();
    Stream s_ag, s_rs;
    DeviceBuffer<float> v(3), ag_in(2), ag_out(2 * n), rs_in(n), rs_out(1);
    upload_on(v.get(), std::vector<float>(3, float(r + 1)), s_ag.get());
    upload_on(ag_in.get(), std::vector<float>{float(r), float(10 * r)}, s_ag.get());
    upload_on(rs_in.get(), std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}, s_rs.get());
    sub->all_reduce(v.get(), v.get(), 3, DType::fp32, s_ag.get());
    // The same order on every rank: an all-gather on `c` and a reduce-scatter on `second`, two streams.
    c.all_gather(ag_in.get(), ag_out.get(), 2, DType::fp32, s_ag.get());
    second->reduce_scatter(rs_in.get(), rs_out.get(), 1, DType::fp32, s_rs.get());
    me.sub_sum = download_on<float>(v.get(), 3, s_ag.get());
    me.gathered = download_on<float>(ag_out.get(), 2 * n, s_ag.get());
    me.scattered = download_on<float>(rs_out.get(), 1, s_rs.get());
  });
  const int expect_sub_rank[] = {1, 1, 0, 0};  // (key, rank): (-2, 2) < (0, 0) and (-3, 3) < (-1, 1)
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    const Seen& me = seen[static_cast<std::size_t>(r)];
    CHECK(me.sub_size == 2);
    CHECK(me.sub_rank == expect_sub_rank[r]);
    CHECK(me.sub_name == "dp_replicate");
    CHECK(me.sub_sum == std::vector<float>(3, r % 2 == 0 ? 1.0f + 3.0f : 2.0f + 4.0f));
    CHECK(me.gathered == std::vector<float>{0, 0, 1, 10, 2, 20, 3, 30});
    CHECK(me.scattered == std::vector<float>{float(n * (r + 1))});
  }
}

// A ring of sends as a pipeline's stages use them: every rank sends to the next and receives from the
// previous in one batch (a blocking send would deadlock), then sends again from a buffer it overwrites
// right after the call: the receiver must still get the value at the time of the send.
TEST_CASE("device thread communicator: point-to-point batches pair in send order and never wait for the receiver") {
  const int n = 3;
  const std::int64_t count = 1 << 16;
  Comms comms = make_device_thread_communicators(n);
  std::vector<std::vector<float>> first(n), second(n);
  run_device_ranks(comms, [&](DeviceCommunicator& c) {
    const int r = c.rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
    Stream st;
    const cudaStream_t s = st.get();
    DeviceBuffer<float> out(count), in1(count), in2(count);
    upload_on(out.get(), std::vector<float>(std::size_t(count), float(r)), s);
    c.send_recv({P2PCall{true, out.get(), count, next}, P2PCall{false, in1.get(), count, prev}}, DType::fp32, s);
    upload_on(out.get(), std::vector<float>(std::size_t(count), float(10 + r)), s);
    c.send_recv({P2PCall{true, out.get(), count, next}}, DType::fp32, s);
    upload_on(out.get(), std::vector<float>(std::size_t(count), -1.0f), s);  // after the send: not sent
    c.send_recv({P2PCall{false, in2.get(), count, prev}}, DType::fp32, s);
    first[std::size_t(r)] = download_on<float>(in1.get(), std::size_t(count), s);
    second[std::size_t(r)] = download_on<float>(in2.get(), std::size_t(count), s);
  });
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    const float prev = float((r + n - 1) % n);
    CHECK(first[std::size_t(r)] == std::vector<float>(std::size_t(count), prev));
    CHECK(second[std::size_t(r)] == std::vector<float>(std::size_t(count), 10 + prev));
  }
}

// Rendezvous mode (NCCL's semantics): a batch of send-to-next and receive-from-previous completes (its
// sends are posted before its receives), but two ranks whose first batches both only send wait for each
// other's receive and time out, where the buffered mode passes.
TEST_CASE("device thread communicator: rendezvous send_recv batches pair in a ring; a send-send cycle times out") {
  const int n = 3;
  Comms ring = make_device_thread_communicators(n, 0, "world", 5.0, P2PMode::rendezvous);
  std::vector<std::vector<float>> got(n);
  run_device_ranks(ring, [&](DeviceCommunicator& c) {
    const int r = c.rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
    Stream st;
    DeviceBuffer<float> out(64), in(64);
    upload_on(out.get(), std::vector<float>(64, float(r)), st.get());
    c.send_recv({P2PCall{true, out.get(), 64, next}, P2PCall{false, in.get(), 64, prev}}, DType::fp32, st.get());
    got[std::size_t(r)] = download_on<float>(in.get(), 64, st.get());
  });
  for (int r = 0; r < n; ++r) CHECK(got[std::size_t(r)] == std::vector<float>(64, float((r + n - 1) % n)));
  for (P2PMode mode : {P2PMode::buffered, P2PMode::rendezvous}) {
    CAPTURE(p2p_mode_name(mode));
    Comms pair = make_device_thread_communicators(2, 0, "world", 0.3, mode);
    std::string error;
    try {
      run_device_ranks(pair, [](DeviceCommunicator& c) {
        Stream st;
        DeviceBuffer<float> out(8), in(8);
        c.send_recv({P2PCall{true, out.get(), 8, 1 - c.rank()}}, DType::fp32, st.get());
        c.send_recv({P2PCall{false, in.get(), 8, 1 - c.rank()}}, DType::fp32, st.get());
        CUDA_CHECK(cudaStreamSynchronize(st.get()));
      });
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (mode == P2PMode::buffered) CHECK(error == "");
    else CHECK(error.find("of a rendezvous send") != std::string::npos);
  }
}

TEST_CASE("device thread communicator: a receive of another count than the send ends in CommAborted") {
  Comms comms = make_device_thread_communicators(2);
  CHECK_THROWS_WITH_AS(run_device_ranks(comms,
                                        [](DeviceCommunicator& c) {
                                          Stream st;
                                          DeviceBuffer<float> buf(8);
                                          const bool send = c.rank() == 0;
                                          c.send_recv({P2PCall{send, buf.get(), send ? 8 : 4, 1 - c.rank()}},
                                                      DType::fp32, st.get());
                                          CUDA_CHECK(cudaStreamSynchronize(st.get()));  // the copy reads buf
                                        }),
                       doctest::Contains("mismatched send_recv: rank 0 sent 8 elements of f32"), CommAborted);
}

TEST_CASE("device thread communicator: abort wakes a rank waiting in a collective; later calls throw") {
  Comms comms = make_device_thread_communicators(2, 0, "world", 60.0);
  std::atomic<bool> woke{false};
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(run_device_ranks(comms,
                                        [&](DeviceCommunicator& c) {
                                          Stream st;
                                          DeviceBuffer<float> buf(16);
                                          if (c.rank() == 1) {
                                            std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                            c.abort("rank 1: injected failure");
                                            return;
                                          }
                                          try {
                                            c.all_reduce(buf.get(), buf.get(), 16, DType::fp32, st.get());
                                          } catch (const CommAborted&) {
                                            woke = true;
                                            throw;
                                          }
                                        }),
                       doctest::Contains("rank 1: injected failure"), CommAborted);
  CHECK(woke.load());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));  // woken, not timed out
  CHECK(comms[0]->aborted());
  CHECK(comms[1]->abort_message() == "rank 1: injected failure");
  CHECK_THROWS_AS(comms[0]->all_gather(nullptr, nullptr, 0, DType::fp32, nullptr), CommAborted);
  CHECK_THROWS_AS(comms[1]->dup("again"), CommAborted);
}

TEST_CASE("device thread communicator: mismatched dtypes and a missing rank end in CommAborted") {
  Comms comms = make_device_thread_communicators(2);
  CHECK_THROWS_WITH_AS(run_device_ranks(comms,
                                        [](DeviceCommunicator& c) {
                                          Stream st;
                                          DeviceBuffer<float> buf(8);
                                          const DType t = c.rank() == 0 ? DType::fp32 : DType::bf16;
                                          c.all_reduce(buf.get(), buf.get(), 8, t, st.get());
                                        }),
                       doctest::Contains("mismatched collectives: all_reduce("), CommAborted);
  Comms lonely = make_device_thread_communicators(2, 0, "world", 0.2);
  CHECK_THROWS_WITH_AS(run_device_ranks(lonely,
                                        [](DeviceCommunicator& c) {
                                          if (c.rank() == 1) return;  // never arrives
                                          Stream st;
                                          DeviceBuffer<float> in(4), out(8);
                                          c.all_gather(in.get(), out.get(), 4, DType::fp32, st.get());
                                        }),
                       doctest::Contains("timed out after 0.2 s waiting in all_gather(f32)"), CommAborted);
}

}  // namespace
}  // namespace fsdpx::cuda::test
