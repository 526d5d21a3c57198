// kineto/kineto_trace.h — what fsdpx reads from a PyTorch profiler (Kineto) trace of one rank: the profiled
// steps (ProfilerStep#N), GPU activity per device and stream (kernels, memcpy, memset) with the launching
// CPU call's correlation id, NCCL's collective arguments (on kernels and on record_param_comms CPU ops),
// annotations (user_annotation, gpu_user_annotation, "nn.Module: X") and memory samples ([memory]).
// Names of the fields are the profiler's (torch/csrc/profiler/standalone/execution_trace_observer and
// libkineto's output_json.cpp). Leaves out Python stacks, flows and the CPU ops nothing above needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdpx {

// NCCL's arguments as the profiler records them ("Collective name", "In msg nelems", ...). -1: absent.
struct NcclArgs {
  std::string collective;     // "allreduce", "_allgather_base", "reduce_scatter_tensor_coalesced", ...
  std::int64_t in_nelems = -1;
  std::int64_t out_nelems = -1;
  int group_size = 0;
  std::string dtype;          // "Float", "BFloat16", ...
  std::string pg_name;        // "Process Group Name"
  std::string pg_desc;        // "Process Group Description": "default_pg", "mesh_dp_shard", ...
  std::string pg_ranks;       // "Process Group Ranks" as written: "[0, 1]"
  std::int64_t seq = -1;      // "Seq" where the profiler records it
};

enum class GpuActivity { kernel, memcpy, memset };

struct GpuEvent {
  std::string name;
  GpuActivity activity = GpuActivity::kernel;
  int device = 0;
  std::int64_t stream = 0;
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t correlation = -1;  // the launching runtime call's
  std::optional<NcclArgs> nccl;
  std::int64_t end_ns() const { return start_ns + dur_ns; }
};

// A CPU-side event fsdpx keeps: a launch (cuda_runtime/cuda_driver, with correlation), an annotation
// (user_annotation, nn.Module), or an op whose arguments matter (record_param_comms).
enum class CpuKind { launch, annotation, module, comms, op };

struct CpuEvent {
  std::string name;
  CpuKind kind = CpuKind::op;
  std::int64_t tid = 0;
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t correlation = -1;
  std::optional<NcclArgs> nccl;
  std::int64_t end_ns() const { return start_ns + dur_ns; }
};

struct ProfilerStep {
  int number = 0;
  std::int64_t tid = 0;  // the training loop's thread
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t end_ns() const { return start_ns + dur_ns; }
};

// One "[memory]" instant event: the allocator's totals after an allocation (bytes > 0) or a free (< 0).
struct MemoryEvent {
  std::int64_t ts_ns = 0;
  int device = -1;  // -1: CPU
  std::int64_t bytes = 0;
  std::int64_t allocated_bytes = 0;
  std::int64_t reserved_bytes = 0;
};

struct RankTrace {
  std::string file;
  int rank = 0;
  int world_size = 1;
  bool rank_from_trace = false;  // distributedInfo.rank was present
  std::vector<ProfilerStep> steps;     // by start time
  std::vector<GpuEvent> gpu;           // by start time
  std::vector<CpuEvent> cpu;           // by start time
  std::vector<GpuEvent> gpu_annotations;  // gpu_user_annotation ranges (name, device, stream, interval)
  std::vector<MemoryEvent> memory;    // by time
};

// Reads one trace file (.json or .json.gz). Not JSON, truncated, or without "traceEvents": a ConfigError
// naming the file. The rank is distributedInfo.rank, else the number after "rank" in the file name, else 0.
RankTrace read_kineto_trace(const std::string& path);

// Every trace of `path` (a file or a directory), by rank; two files of one rank are a ConfigError.
std::vector<RankTrace> read_kineto_traces(const std::string& path);

}  // namespace fsdpx
