// kineto/step_breakdown.h — a rank's GPU time measured the way HolisticTraceAnalysis does
// (hta/analyzers/breakdown_analysis.py get_temporal_breakdown, get_gpu_kernel_breakdown; hta/common/trace.py
// _filter_irrelevant_gpu_kernels): over the whole trace and per profiled step, compute (union of compute
// kernels), communication (union of NCCL kernels), exposed communication (communication while no compute
// kernel runs), idle (between the first kernel's start and the last one's end, no GPU activity), and per
// collective kind and process group the count and summed time. Leaves out arrival skew across ranks.
#pragma once

#include <string>
#include <vector>

#include "kineto/kineto_trace.h"

namespace fsdpx {

struct CollectiveTime {
  std::string kind;   // collective_kind(): "all_gather", "reduce_scatter", ...
  std::string group;  // process-group description (or name) when recorded; "" otherwise
  int count = 0;
  double time_s = 0;  // summed kernel durations
  double bytes = 0;   // summed message bytes where sizes and dtype are recorded (max of in and out)
};

struct TimeBreakdown {
  int events = 0;                       // GPU kernels, memcpys and memsets counted
  double span_s = 0;                    // HTA's kernel_time: last end - first start
  double compute_s = 0;                 // union of compute kernels
  double communication_s = 0;           // union of communication kernels
  double exposed_communication_s = 0;   // communication_s less its overlap with compute
  double memory_s = 0;                  // union of memcpy/memset
  double idle_s = 0;                    // span with no GPU event running
  double compute_kernel_sum_s = 0;      // get_gpu_kernel_breakdown's COMPUTATION sum
  double communication_kernel_sum_s = 0;
  double memory_kernel_sum_s = 0;
  std::vector<CollectiveTime> collectives;  // by time, largest first
};

struct StepBreakdown {
  int step = 0;           // N of ProfilerStep#N
  double cpu_step_s = 0;  // the ProfilerStep annotation's duration
  TimeBreakdown gpu;      // GPU events launched within the step
};

struct RankBreakdown {
  int rank = 0;
  std::string file;
  bool last_step_excluded = false;  // HTA leaves out the last profiled step's kernels from whole-trace figures
  TimeBreakdown whole;
  std::vector<StepBreakdown> steps;
};

TimeBreakdown time_breakdown(const std::vector<const GpuEvent*>& events);
RankBreakdown rank_breakdown(const RankTrace& trace);

}  // namespace fsdpx
