// simulator/case_uncertainty.h — an input a published run's source leaves unsure, as the range of readings
// the simulator also runs the case at, so that the case's prediction is a range and the 80% interval
// around it widens where the input is unsure (issue 37). Today one input: the inter-node bandwidth, where a
// source prints one figure for a cluster without saying per node or per GPU, one direction or both. The
// case states it in its `uncertain` list, as the fp8 recipes are stated there (case_fp8.cpp):
//   "inter-node bandwidth between LO and HI Gb/s per GPU: <why>"
// with LO <= inter_node_bw_gbit_per_gpu <= HI. Leaves out every other unsure input (GPU variant, clocks).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fsdpx {

inline constexpr std::string_view kBandwidthRangePrefix = "inter-node bandwidth between ";

struct BandwidthRange {
  double low_gbit_per_gpu = 0;
  double high_gbit_per_gpu = 0;
};

// The range an `uncertain` entry states, nullopt when the entry does not start with kBandwidthRangePrefix.
// Throws ConfigError "<file>: <path>: ..." when it starts so but is not "LO and HI Gb/s per GPU[: why]" with
// 0 < LO <= HI inside the accepted bandwidth range (core/input_ranges.h).
std::optional<BandwidthRange> parse_bandwidth_range(const std::string& entry, const std::string& file,
                                                    const std::string& path);

}  // namespace fsdpx
