// tests/kineto/test_step_breakdown.cpp — fsdpx's HTA-style figures against HolisticTraceAnalysis's own on
// public traces (tests/data/kineto/README.md; numbers recorded by tools/hta_reference.py), and on a small
// synthetic trace whose answer follows from its intervals.
#include <cmath>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kineto/intervals.h"
#include "kineto/kernel_class.h"
#include "kineto/step_breakdown.h"

using namespace fsdpx;

namespace {

const std::string kData = std::string(FSDPX_TEST_DATA_DIR) + "/kineto";

void check_within(double ours_s, double hta_us, double tolerance, const std::string& what) {
  const double ours_us = ours_s * 1e6;
  const double diff = std::abs(ours_us - hta_us) / std::max(hta_us, 1.0);
  INFO(fmt::format("{}: fsdpx {:.1f} us, HTA {:.1f} us, maxdiff {:.3f}%", what, ours_us, hta_us, 100 * diff));
  CHECK(diff <= tolerance);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/fsdpx_test_kineto_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("whole-trace figures agree with HTA's temporal and kernel breakdowns within 2%") {
  std::ifstream in(kData + "/hta_reference.json");
  REQUIRE(in);
  const nlohmann::json ref = nlohmann::json::parse(in);
  int ranks_checked = 0;
  for (const auto& [dir, ranks] : ref.at("traces").items()) {
    const std::string folder = kData + "/" + dir.substr(dir.rfind('/') + 1);
    for (const RankTrace& t : read_kineto_traces(folder)) {
      const nlohmann::json& h = ranks.at(std::to_string(t.rank));
      const RankBreakdown r = rank_breakdown(t);
      const std::string where = fmt::format("{} rank {}", folder, t.rank);
      CHECK(r.last_step_excluded);
      check_within(r.whole.span_s, h.at("kernel_time_us"), 0.02, where + " kernel time");
      check_within(r.whole.compute_s, h.at("compute_time_us"), 0.02, where + " compute");
      check_within(r.whole.idle_s, h.at("idle_time_us"), 0.02, where + " idle");
      check_within(r.whole.span_s - r.whole.compute_s - r.whole.idle_s, h.at("non_compute_time_us"), 0.02,
                   where + " non-compute");
      const nlohmann::json& sums = h.at("kernel_type_sum_us");
      check_within(r.whole.communication_kernel_sum_s, sums.at("COMMUNICATION"), 0.02, where + " NCCL kernels");
      check_within(r.whole.memory_kernel_sum_s, sums.at("MEMORY"), 0.02, where + " memcpy/memset");
      check_within(r.whole.compute_kernel_sum_s, sums.at("COMPUTATION"), 0.02, where + " compute kernels");
      // HTA's overlap: the share of communication time during which compute runs.
      const double overlap = 1 - r.whole.exposed_communication_s / r.whole.communication_s;
      CHECK(std::abs(100 * overlap - h.at("comp_comm_overlap_pctg").get<double>()) <= 2.0);
      ++ranks_checked;
    }
  }
  CHECK(ranks_checked == 3);
}

TEST_CASE("NCCL arguments, steps and collective kinds of a real trace") {
  const RankTrace t = read_kineto_trace(kData + "/hta_nccl_parser_config/nccl_data.json.gz");
  CHECK(t.rank_from_trace);
  CHECK(t.world_size == 2);
  REQUIRE(t.steps.size() >= 2);
  CHECK(t.steps.front().number == 4);
  int allreduce = 0, broadcast = 0;
  for (const GpuEvent& e : t.gpu)
    if (e.nccl) {
      allreduce += e.nccl->collective == "allreduce";
      broadcast += e.nccl->collective == "broadcast";
      CHECK(e.nccl->group_size == 2);
      CHECK((e.nccl->dtype == "Float" || e.nccl->dtype == "Long"));
      CHECK(e.nccl->pg_desc == "default_pg");
      CHECK(e.nccl->pg_ranks == "[0, 1]");
      CHECK(e.nccl->in_nelems > 0);
    }
  CHECK(allreduce == 15);
  CHECK(broadcast == 6);
  const RankBreakdown r = rank_breakdown(t);
  REQUIRE(!r.whole.collectives.empty());
  CHECK(r.whole.collectives.front().kind == "all_reduce");
  CHECK(r.whole.collectives.front().group == "default_pg");
  CHECK(r.whole.collectives.front().bytes > 0);
  CHECK(r.steps.size() == t.steps.size());
  int comms = 0;
  for (const CpuEvent& c : t.cpu) comms += c.kind == CpuKind::comms && c.nccl.has_value();
  CHECK(comms > 0);
}

TEST_CASE("a synthetic trace: exposed communication, idle time and steps follow from the intervals") {
  // Step 1 launches compute [0,10us) and NCCL [5,20us); step 2 launches compute [30,40us) and a memcpy
  // [40,45us). Whole trace (last step left out): span 20, compute 10, comm 15, exposed 10, idle 0.
  const std::string trace = R"JSON({"distributedInfo": {"rank": 3, "world_size": 4}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0, "dur": 25},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 1, "tid": 1, "ts": 25, "dur": 25},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 26, "dur": 1, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 27, "dur": 1, "args": {"correlation": 4}},
    {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 0, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*)", "pid": 0, "tid": 20, "ts": 5, "dur": 15,
     "args": {"device": 0, "stream": 20, "correlation": 2, "Collective name": "_allgather_base", "In msg nelems": 10,
              "Out msg nelems": 40, "Group size": 4, "dtype": "BFloat16", "Process Group Description": "mesh_dp_shard", "Seq": 9}},
    {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 3}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 4}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3, "s": "t",
     "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512, "Total Allocated": 1024, "Total Reserved": 2048}},
    {"ph": "s", "cat": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 1}]})JSON";
  const RankTrace t = read_kineto_trace(write_temp("synthetic.json", trace));
  CHECK(t.rank == 3);
  REQUIRE(t.gpu.size() == 4);
  REQUIRE(t.memory.size() == 1);
  CHECK(t.memory[0].reserved_bytes == 2048);
  CHECK(t.gpu[1].nccl->seq == 9);
  const RankBreakdown r = rank_breakdown(t);
  CHECK(r.whole.events == 2);
  CHECK(r.whole.span_s == doctest::Approx(20e-6));
  CHECK(r.whole.compute_s == doctest::Approx(10e-6));
  CHECK(r.whole.communication_s == doctest::Approx(15e-6));
  CHECK(r.whole.exposed_communication_s == doctest::Approx(10e-6));
  CHECK(r.whole.idle_s == doctest::Approx(0).epsilon(1e-12));
  REQUIRE(r.whole.collectives.size() == 1);
  CHECK(r.whole.collectives[0].kind == "all_gather");
  CHECK(r.whole.collectives[0].group == "mesh_dp_shard");
  CHECK(r.whole.collectives[0].bytes == doctest::Approx(80));
  REQUIRE(r.steps.size() == 2);
  CHECK(r.steps[1].step == 8);
  CHECK(r.steps[1].gpu.events == 2);
  CHECK(r.steps[1].gpu.span_s == doctest::Approx(15e-6));
  CHECK(r.steps[1].gpu.memory_s == doctest::Approx(5e-6));
  CHECK(r.steps[1].gpu.idle_s == doctest::Approx(0).epsilon(1e-12));
  CHECK(r.steps[0].gpu.exposed_communication_s == doctest::Approx(10e-6));
}

TEST_CASE("interval union and overlap") {
  const auto u = merged({{5, 10}, {0, 3}, {2, 6}, {20, 30}});
  REQUIRE(u.size() == 2);
  CHECK(length_ns(u) == 20);
  CHECK(overlap_ns(u, merged({{4, 22}})) == 8);
  CHECK(overlap_ns(u, {}) == 0);
}

TEST_CASE("HTA's kernel classes and collective kinds") {
  CHECK(classify_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") ==
        KernelClass::communication);
  CHECK(classify_kernel("void at::native::elementwise_kernel<128, 2>") == KernelClass::compute);
  CHECK(classify_kernel("Memcpy HtoD (Pageable -> Device)") == KernelClass::memory);
  CHECK(classify_kernel("Memset (Device)") == KernelClass::memory);
  CHECK(classify_kernel("cudaStreamSynchronize") == KernelClass::other);
  CHECK(collective_kind_of_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*)") == "reduce_scatter");
  CHECK(collective_kind_of_name("reduce_scatter_tensor_coalesced") == "reduce_scatter");
  CHECK(collective_kind_of_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)") == "send_recv");
  CHECK(collective_kind_of_name("allreduce") == "all_reduce");
}
