// kineto/kernel_class.h — what a GPU event is, by its name, with HTA's patterns (hta/common/types.py,
// CommunicateKernelGroupingPattern, MemoryKernelGroupingPattern, ComputeKernelGroupingPattern; applied in
// that order by hta/utils/utils.py get_kernel_type), and the collective a communication kernel runs, in one
// vocabulary for NCCL kernel names and the profiler's "Collective name". Leaves out MTIA's names.
#pragma once

#include <string>
#include <string_view>

#include "kineto/kineto_trace.h"

namespace fsdpx {

enum class KernelClass { compute, communication, memory, other };

const char* kernel_class_name(KernelClass c);  // "compute", "communication", "memory", "other"
KernelClass classify_kernel(std::string_view name);

// "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "send_recv", "send", "recv", "broadcast",
// "reduce", "barrier", or the lower-cased name when none fits. From the NCCL arguments when recorded,
// else from the kernel name (ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_ReduceScatter_Sum_bf16_...).
std::string collective_kind(const GpuEvent& kernel);
std::string collective_kind_of_name(std::string_view collective_or_kernel_name);

}  // namespace fsdpx
