// simulator/engine_memo.h — engine results of programs the engine cannot tell apart, kept for reuse. The
// planner refines a shape over configurations whose lowered programs differ only in dependencies that
// never bind: prefetch depth 2 or an all-gather cap of 4 against 1 and 2, where a gather's two waits (the
// compute op depth + 1 back, the release of the cap-th previous gather) fall on the same op or on ops of
// one stream (issue 36, memo12: 305 to 394 of about 2,500 simulations of the 70B curve repeated another's
// figures). The key is every field run_engine reads (engine_setup.cpp op_data, build_roles; engine.cpp), with
// each op's dependencies reduced to the last one per stream: a stream runs its ops one at a time in order,
// so an op that waits for a later op of a stream has also waited for every earlier one, and an op's start
// is the same with or without the earlier wait. Keys are compared in full (a hash only finds candidates).
// Leaves out what the engine's caller reads besides its result (summarise and the probes' windows read
// the program itself, so a hit is exact for them too) and sharing between threads (one memo per search).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "simulator/engine.h"

namespace fsdpx {

// The engine's view of `program` under `options`: equal keys give equal EngineResults.
std::vector<std::uint64_t> engine_key(const StepProgram& program, const EngineOptions& options);

class EngineMemo {
 public:
  // Keeps results until their keys and records hold about `budget_bytes`, dropping the least recently used.
  explicit EngineMemo(std::size_t budget_bytes = kDefaultBudgetBytes) : budget_bytes_(budget_bytes) {}
  EngineMemo(const EngineMemo&) = delete;
  EngineMemo& operator=(const EngineMemo&) = delete;

  // run_engine(program, options), or the result of an earlier program with an equal key.
  EngineResult run(const StepProgram& program, const EngineOptions& options);
  std::int64_t hits() const { return hits_; }
  std::int64_t misses() const { return misses_; }

  // The refinement's equal programs come within a shape's descent, a few dozen simulations apart; a
  // flat probe's key and records are about 0.2-0.5 MB (70B, 64 nodes).
  static constexpr std::size_t kDefaultBudgetBytes = std::size_t(64) << 20;

 private:
  struct Entry {
    std::uint64_t hash = 0;
    std::vector<std::uint64_t> key;
    EngineResult result;
    std::size_t bytes = 0;
  };
  void evict_to(std::size_t budget_bytes);

  std::size_t budget_bytes_;
  std::size_t held_bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_multimap<std::uint64_t, std::list<Entry>::iterator> by_hash_;
  std::int64_t hits_ = 0, misses_ = 0;
};

}  // namespace fsdpx
