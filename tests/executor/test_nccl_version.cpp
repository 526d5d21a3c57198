// tests/executor/test_nccl_version.cpp — decoding NCCL version integers (both encodings of nccl.h's
// NCCL_VERSION) and the several-ranks-per-GPU rule (NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE != 0).
#include <doctest/doctest.h>

#include "executor/comm/nccl_version.h"

namespace fsdpx {
namespace {

TEST_CASE("nccl version: both encodings decode") {
  const NcclVersion v2289 = decode_nccl_version(22809);  // 2.28.9 (this machine's nccl.h)
  CHECK(v2289.major == 2);
  CHECK(v2289.minor == 28);
  CHECK(v2289.patch == 9);
  CHECK(to_string(v2289) == "2.28.9");
  CHECK(to_string(decode_nccl_version(2708)) == "2.7.8");  // before 2.9: X*1000 + Y*100 + Z
  CHECK(to_string(decode_nccl_version(23001)) == "2.30.1");
  CHECK(decode_nccl_version(2708).code() < decode_nccl_version(20906).code());
}

TEST_CASE("nccl version: several ranks per GPU need 2.30 and the variable") {
  const NcclVersion v228 = decode_nccl_version(22809), v230 = decode_nccl_version(23000);
  CHECK_FALSE(nccl_allows_multi_rank_gpu(v228, "1"));
  CHECK_FALSE(nccl_allows_multi_rank_gpu(v230, nullptr));
  CHECK_FALSE(nccl_allows_multi_rank_gpu(v230, "0"));
  CHECK_FALSE(nccl_allows_multi_rank_gpu(v230, ""));
  CHECK(nccl_allows_multi_rank_gpu(v230, "1"));
  CHECK(nccl_allows_multi_rank_gpu(decode_nccl_version(30000), "1"));
}

}  // namespace
}  // namespace fsdpx
