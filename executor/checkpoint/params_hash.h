// executor/checkpoint/params_hash.h — the run record's parameter hash (RunRecord::params_hash): 64-bit FNV-1a
// (executor/checkpoint/checksum.h) of the full fp32 parameters in memory order. Above one chunk of
// kParamsHashChunkBytes the chunks are hashed on several threads and the hash is FNV-1a of their hashes in
// order (little-endian 64-bit words): byte-serial FNV-1a runs at ~1.4 ns per byte (a 2-core x86-64 VM), 7 s
// of the 22 s a CUDA run of llama3.2-1b's 4.9 GB of parameters spent after its last step on an H200 (issue
// 29, 2026-11-30). A model of one chunk or less keeps the plain FNV-1a value. Leaves out cryptographic
// strength (it compares runs, it does not authenticate) and the state gather before it (trainer.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fsdpx {

inline constexpr std::size_t kParamsHashChunkBytes = std::size_t{64} << 20;

// 16 hex digits; `threads` 0: the machine's hardware threads.
std::string params_hash(const std::vector<float>& params, unsigned threads = 0);

}  // namespace fsdpx
