// kineto/kernel_class.cpp — HTA's kernel-type regular expressions as string tests (same order, same
// anchors), and collective names normalised by dropping PyTorch's suffixes (_base, _tensor, _coalesced,
// _into) and NCCL's algorithm/protocol/dtype tails. Leaves out HIP collective names beyond the "hip" prefix.
#include "kineto/kernel_class.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace fsdpx {

namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// (^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)
bool is_communication(std::string_view n) {
  return starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || contains(n, "ncclKernel");
}

// (^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)
bool is_memory(std::string_view n) {
  return starts(n, "Memcpy") || starts(n, "Memset") || starts(n, "hipMemcpy") || starts(n, "hipMemset") ||
         starts(n, "dma");
}

// The inverse of (^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)|
// (^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)|(^collective_subgraph_execution)
// (Python's re.match anchors at the start, so "cuda.*LaunchKernel" must start with "cuda").
bool is_compute(std::string_view n) {
  for (std::string_view p : {"nccl", "Stream Wait Event", "runFunction", "hip", "job_exe", "packet", "pe_exe",
                             "cpum_exe_subgraph", "hccl", "collective_subgraph_execution"})
    if (starts(n, p)) return false;
  for (std::string_view p : {"Memcpy", "Memset", "dma", "Sync"})
    if (contains(n, p)) return false;
  return !(starts(n, "cuda") && contains(n.substr(4), "LaunchKernel"));
}

std::string lower_letters(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const char* kernel_class_name(KernelClass c) {
  switch (c) {
    case KernelClass::compute: return "compute";
    case KernelClass::communication: return "communication";
    case KernelClass::memory: return "memory";
    case KernelClass::other: return "other";
  }
  return "other";
}

KernelClass classify_kernel(std::string_view name) {
  if (is_communication(name)) return KernelClass::communication;
  if (is_memory(name)) return KernelClass::memory;
  return is_compute(name) ? KernelClass::compute : KernelClass::other;
}

std::string collective_kind_of_name(std::string_view name) {
  // "ncclDevKernel_AllGather_RING_LL(...)" -> "allgatherringll"; "_allgather_base" -> "allgatherbase".
  const std::string n = lower_letters(name.substr(0, name.find('(')));
  static const std::array<std::pair<const char*, const char*>, 10> kinds{{
      {"reducescatter", "reduce_scatter"}, {"allgather", "all_gather"}, {"allreduce", "all_reduce"},
      {"alltoall", "all_to_all"}, {"sendrecv", "send_recv"}, {"broadcast", "broadcast"}, {"barrier", "barrier"},
      {"send", "send"}, {"recv", "recv"}, {"reduce", "reduce"}}};
  for (const auto& [key, kind] : kinds)
    if (contains(n, key)) return kind;
  return n;
}

std::string collective_kind(const GpuEvent& kernel) {
  if (kernel.nccl && !kernel.nccl->collective.empty()) return collective_kind_of_name(kernel.nccl->collective);
  return collective_kind_of_name(kernel.name);
}

}  // namespace fsdpx
