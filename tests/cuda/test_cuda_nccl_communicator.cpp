// tests/cuda/test_cuda_nccl_communicator.cpp — the NCCL communicator on one GPU: a one-rank communicator
// (any NCCL version: collectives become copies, NCCL #103) in and out of place, split and dup; abort of
// the family; the watchdog aborting a collective held back past its timeout by a blocked stream; a
// point-to-point batch to itself; two ranks on one GPU where NCCL allows it (>= 2.30 with
// NCCL_MULTI_RANK_GPU_ENABLE=1), also exchanging a send/recv batch each way. Built with NCCL only.
#include <doctest/doctest.h>

#if defined(FSDPX_HAVE_NCCL)

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <type_traits>
#include <vector>

#include "executor/cuda/nccl_communicator.h"
#include "tests/cuda/comm_test_util.h"

namespace fsdpx::cuda::test {
namespace {

using Bits = std::uint16_t;

NcclOptions test_options(double collective_timeout_s = 60.0) {
  NcclOptions o;
  o.device = 0;
  o.name = "world";
  o.init_timeout_s = 60.0;
  o.collective_timeout_s = collective_timeout_s;
  o.poll_interval_s = 0.01;
  return o;
}

void run(DeviceCommunicator& c, Collective k, const void* in, void* out, std::int64_t n, DType t, cudaStream_t s) {
  switch (k) {
    case Collective::all_gather: return c.all_gather(in, out, n, t, s, "ag.test");
    case Collective::reduce_scatter: return c.reduce_scatter(in, out, n, t, s, "rs.test");
    case Collective::all_reduce: return c.all_reduce(in, out, n, t, s, "ar.test");
    case Collective::broadcast: return c.broadcast(in, out, n, t, 0, s, "bc.test");
    case Collective::send_recv:
    case Collective::all_to_all: break;  // not device-communicator collectives
  }
}

// With one rank every collective is a copy: out of place and in place, the output is the input's bits.
template <class H>
void check_one_rank_copies(DeviceCommunicator& c, const std::vector<H>& x, DType t, cudaStream_t s) {
  using D = std::conditional_t<sizeof(H) == 2, bf16, float>;
  const std::size_t n = x.size();
  DeviceBuffer<D> in(n), out(n), buf(n);
  upload_on(in.get(), x, s);
  for (Collective k : {Collective::all_gather, Collective::reduce_scatter, Collective::all_reduce,
                           Collective::broadcast}) {
    const std::string name = std::string(collective_name(k)) + " " + word_name(t);
    CUDA_CHECK(cudaMemsetAsync(out.get(), 0xff, sizeof(D) * n, s));  // poison: the output must be written
    upload_on(buf.get(), x, s);
    run(c, k, in.get(), out.get(), std::int64_t(n), t, s);
    run(c, k, buf.get(), buf.get(), std::int64_t(n), t, s);
    CHECK(same_bits(name, download_on<H>(out.get(), n, s), x));
    CHECK(same_bits(name + " in place", download_on<H>(buf.get(), n, s), x));
  }
}

TEST_CASE("nccl: version and the several-ranks-per-GPU rule") {
  MESSAGE(nccl_describe());
  const NcclVersion v = nccl_library_version();
  CHECK(v.major >= 2);
  CHECK(nccl_multi_rank_gpu_allowed() == nccl_allows_multi_rank_gpu(v, std::getenv("NCCL_MULTI_RANK_GPU_ENABLE")));
}

TEST_CASE("nccl: a one-rank communicator copies in and out of place; split and dup work") {
  auto comm = make_nccl_communicator(nccl_unique_id(), 1, 0, test_options());
  CHECK(comm->rank() == 0);
  CHECK(comm->size() == 1);
  CHECK(comm->name() == "world");
  Stream st;
  std::vector<float> f32(4099);
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  for (float& v : f32) v = u(rng());
  std::vector<Bits> b16;
  for (float v : random_bf16(4099)) b16.push_back(bf16_bits(v));
  check_one_rank_copies(*comm, f32, DType::fp32, st.get());
  check_one_rank_copies(*comm, b16, DType::bf16, st.get());

  auto sub = comm->split(0, 0, "dp_shard");
  auto second = comm->dup("dp_shard.rs");
  CHECK(sub->size() == 1);
  CHECK(sub->rank() == 0);
  CHECK(sub->name() == "dp_shard");
  CHECK(second->name() == "dp_shard.rs");
  Stream other;
  check_one_rank_copies(*sub, f32, DType::fp32, st.get());
  check_one_rank_copies(*second, b16, DType::bf16, other.get());
  CHECK_FALSE(comm->aborted());
}

TEST_CASE("nccl: abort reaches every communicator of the family; later calls throw") {
  int calls = 0;
  std::string seen;
  NcclOptions o = test_options();
  o.on_abort = [&](const std::string& m) { ++calls, seen = m; };  // runs on this thread: abort() is called here
  auto comm = make_nccl_communicator(nccl_unique_id(), 1, 0, o);
  auto sub = comm->split(0, 0, "dp_shard");
  sub->abort("rank 0: injected failure");
  CHECK(comm->aborted());
  CHECK(comm->abort_message() == "rank 0: injected failure");
  comm->abort("a second message");
  CHECK(calls == 1);
  CHECK(seen == "rank 0: injected failure");
  Stream st;
  DeviceBuffer<float> buf(8);
  CHECK_THROWS_WITH_AS(comm->all_reduce(buf.get(), buf.get(), 8, DType::fp32, st.get()),
                       doctest::Contains("rank 0: injected failure"), CommAborted);
  CHECK_THROWS_AS(sub->all_gather(buf.get(), buf.get(), 8, DType::fp32, st.get()), CommAborted);
  CHECK_THROWS_AS(comm->split(0, 0, "again"), CommAborted);
}

// A host function that blocks its stream until the gate opens (or 5 s pass: the test never hangs).
struct Gate {
  std::atomic<bool> open{false};
};
void CUDART_CB hold_stream(void* p) {
  auto* gate = static_cast<Gate*>(p);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!gate->open.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST_CASE("nccl: the watchdog aborts a collective that does not complete within its timeout") {
  std::promise<std::string> aborted;
  std::atomic<int> calls{0};
  NcclOptions o = test_options(0.2);
  o.on_abort = [&](const std::string& m) {
    if (calls++ == 0) aborted.set_value(m);
  };
  auto comm = make_nccl_communicator(nccl_unique_id(), 1, 0, o);
  Gate gate;
  Stream st;
  DeviceBuffer<float> in(1024), out(1024);
  CUDA_CHECK(cudaLaunchHostFunc(st.get(), hold_stream, &gate));
  comm->all_reduce(in.get(), out.get(), 1024, DType::fp32, st.get(), "ar.gated");  // behind the blocked host function
  auto fut = aborted.get_future();
  const bool fired = fut.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  gate.open = true;
  st.sync();  // a one-rank collective is a plain cudaMemcpyAsync: safe to run after ncclCommAbort
  REQUIRE(fired);
  const std::string msg = fut.get();
  MESSAGE(msg);
  CHECK(msg.find("rank 0: all_reduce ar.gated on world did not complete within 0.2 s (in flight ") == 0);
  CHECK(msg.find("; aborting the communicators") != std::string::npos);
  CHECK(comm->aborted());
  CHECK(calls.load() == 1);
  CHECK_THROWS_AS(comm->all_reduce(in.get(), out.get(), 1024, DType::fp32, st.get()), CommAborted);
}

TEST_CASE("nccl: a send/recv batch to itself copies the buffer") {
  auto c = make_nccl_communicator(nccl_unique_id(), 1, 0, test_options());
  Stream st;
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f - 7.0f;
  DeviceBuffer<float> in(x.size()), out(x.size());
  upload_on(in.get(), x, st.get());
  c->send_recv({P2PCall{true, in.get(), 1000, 0}, P2PCall{false, out.get(), 1000, 0}}, DType::fp32, st.get(), "p2p.self");
  CHECK(download_on<float>(out.get(), x.size(), st.get()) == x);
}

TEST_CASE("nccl: two ranks on one GPU where NCCL allows it") {
  if (!nccl_multi_rank_gpu_allowed()) {
    // tools/gpu_check.sh reads this line: the row says "not run", never "ok" (NCCL < 2.30 refuses).
    std::printf("NOT RUN: two ranks on one GPU: %s\n", nccl_describe().c_str());
    MESSAGE("not run: " << nccl_describe());
    return;
  }
  const NcclId id = nccl_unique_id();
  std::vector<std::vector<float>> sums(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      try {
        auto c = make_nccl_communicator(id, 2, r, test_options());
        Stream st;
        DeviceBuffer<float> buf(1024);
        upload_on(buf.get(), std::vector<float>(1024, float(r + 1)), st.get());
        c->all_reduce(buf.get(), buf.get(), 1024, DType::fp32, st.get(), "ar.two_ranks");
        // Both send first and receive second in one batch: grouped, neither waits for the other.
        DeviceBuffer<float> got(1024);
        c->send_recv({P2PCall{true, buf.get(), 1024, 1 - r}, P2PCall{false, got.get(), 1024, 1 - r}}, DType::fp32,
                     st.get(), "p2p.two_ranks");
        sums[static_cast<std::size_t>(r)] = download_on<float>(got.get(), 1024, st.get());
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(errors[static_cast<std::size_t>(r)] == "");
    CHECK(sums[static_cast<std::size_t>(r)] == std::vector<float>(1024, 3.0f));
  }
}

}  // namespace
}  // namespace fsdpx::cuda::test

#endif  // FSDPX_HAVE_NCCL
