// tests/cuda/emulated/test_emulated_nccl.cpp — the emulated NCCL's semantics under the real
// NcclCommunicator with two ranks as threads: a send completes only when the receiver has posted its
// receive (rendezvous: its stream is still busy 100 ms later, then done once the receive is posted and the
// data arrived), and an all-reduce of two ranks sums in rank order. Leaves out more than two ranks (the
// pipeline tests run four).
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "executor/cuda/nccl_communicator.h"
#include "tests/cuda/comm_test_util.h"

namespace fsdpx::cuda::test {
namespace {

std::vector<std::unique_ptr<DeviceCommunicator>> two_ranks() {
  const NcclId id = nccl_unique_id();
  std::vector<std::unique_ptr<DeviceCommunicator>> c(2);
  std::thread other([&] { c[1] = make_nccl_communicator(id, 2, 1, {}); });
  c[0] = make_nccl_communicator(id, 2, 0, {});
  other.join();
  return c;
}

TEST_CASE("emulated NCCL: a send completes only once its receive is posted (rendezvous)") {
  auto c = two_ranks();
  Stream s0, s1;
  const std::vector<float> x{1.5f, -2.0f, 3.25f};
  DeviceBuffer<float> in(3), out(3);
  upload_on(in.get(), x, s0.get());
  c[0]->send_recv({P2PCall{true, in.get(), 3, 1}}, DType::fp32, s0.get(), "p2p.alone");
  cudaEvent_t sent = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&sent, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(sent, s0.get()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(cudaEventQuery(sent) == cudaErrorNotReady);  // no receiver yet: the send has not completed
  c[1]->send_recv({P2PCall{false, out.get(), 3, 0}}, DType::fp32, s1.get(), "p2p.alone");
  CUDA_CHECK(cudaEventSynchronize(sent));
  CHECK(download_on<float>(out.get(), 3, s1.get()) == x);
  CUDA_CHECK(cudaEventDestroy(sent));
}

TEST_CASE("emulated NCCL: a two-rank all-reduce sums in rank order on both ranks") {
  auto c = two_ranks();
  std::vector<std::vector<float>> got(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      Stream s;
      DeviceBuffer<float> buf(4);
      upload_on(buf.get(), std::vector<float>{float(r), 0.5f, 1e8f * float(1 - 2 * r), 2.0f}, s.get());
      c[std::size_t(r)]->all_reduce(buf.get(), buf.get(), 4, DType::fp32, s.get(), "ar.two");
      got[std::size_t(r)] = download_on<float>(buf.get(), 4, s.get());
    });
  for (auto& t : ranks) t.join();
  const std::vector<float> sum{1.0f, 1.0f, 0.0f, 4.0f};
  CHECK(got[0] == sum);
  CHECK(got[1] == sum);
}

}  // namespace
}  // namespace fsdpx::cuda::test
