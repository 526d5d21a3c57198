// executor/comm/nccl_version.h — what an NCCL version number means, without NCCL: decoding
// ncclGetVersion's integer and whether several ranks may share one GPU (refused with "Duplicate GPU
// detected" up to 2.28, NVIDIA/nccl src/init.cc and issue #418; allowed, experimentally, from 2.30 with
// NCCL_MULTI_RANK_GPU_ENABLE=1, NVIDIA/nccl docs env.rst). Host-only so that the CPU tests cover it; the NCCL calls are in
// executor/cuda/nccl_communicator.h.
#pragma once

#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace fsdpx {

struct NcclVersion {
  int major = 0, minor = 0, patch = 0;
  int code() const { return major * 10000 + minor * 100 + patch; }  // the 2.9+ encoding, for comparisons
};

// nccl.h NCCL_VERSION(X, Y, Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9 on.
inline NcclVersion decode_nccl_version(int code) {
  if (code >= 10000) return {code / 10000, (code % 10000) / 100, code % 100};
  return {code / 1000, (code % 1000) / 100, code % 100};
}

inline std::string to_string(const NcclVersion& v) { return fmt::format("{}.{}.{}", v.major, v.minor, v.patch); }

constexpr NcclVersion kNcclMultiRankGpuVersion{2, 30, 0};
constexpr const char* kNcclMultiRankGpuEnv = "NCCL_MULTI_RANK_GPU_ENABLE";

// True when NCCL `v` lets several ranks use one GPU given the value of NCCL_MULTI_RANK_GPU_ENABLE
// (null when unset); NCCL reads the variable as an integer, non-zero enables.
inline bool nccl_allows_multi_rank_gpu(const NcclVersion& v, const char* env) {
  return v.code() >= kNcclMultiRankGpuVersion.code() && env != nullptr && std::strtol(env, nullptr, 10) != 0;
}

}  // namespace fsdpx
