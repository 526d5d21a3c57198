// simulator/op_shift.cpp — the identity table of op_shift.h: each op's identity (at ordinal 0) packed in 64
// bits, micro-batch lowest, and the ops sorted by it. The same op d micro-batches later has the identity + d
// and the same ordinal, so it is the entry at that ordinal in the run of identity + d.
#include "simulator/op_shift.h"

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {

namespace {

constexpr int kMicroBatchBits = 12;
constexpr int kOrdinalBits = 4;

// The identity of `op` at ordinal 0, and whether every field fits its bits.
std::pair<std::uint64_t, bool> identity(const Op& op) {
  const std::uint64_t fields[] = {std::uint64_t(op.kind),        std::uint64_t(op.stream),
                                  std::uint64_t(op.payload),     std::uint64_t(op.kept_shard_ranks > 0),
                                  0,                             std::uint64_t(op.stage + 1),
                                  std::uint64_t(op.segment + 1), std::uint64_t(op.unit + 1),
                                  std::uint64_t(op.micro_batch)};
  const int bits[] = {4, 4, 4, 1, kOrdinalBits, 11, 12, 12, kMicroBatchBits};
  std::uint64_t key = 0;
  for (int i = 0; i < 9; ++i) {
    if (fields[i] >= (std::uint64_t(1) << bits[i])) return {0, false};
    key = key << bits[i] | fields[i];
  }
  return {key, true};
}

}  // namespace

OpShiftTable::OpShiftTable(const RoleProgram& role) : ops_(role.ops.size()) {
  for (std::size_t i = 0; i < role.ops.size(); ++i) {
    const Op& op = role.ops[i];
    if (op.micro_batch < 0) continue;
    const auto [key, fits] = identity(op);
    ops_[i] = OpKey{key, 0, op.micro_batch, fits};
    by_key_.emplace_back(key, int(i));
  }
  std::sort(by_key_.begin(), by_key_.end());
  // Ordinals count the ops of one identity in program order (ops whose fields do not fit share key 0).
  for (std::size_t k = 1; k < by_key_.size(); ++k)
    if (by_key_[k].first == by_key_[k - 1].first)
      ops_[std::size_t(by_key_[k].second)].ordinal = ops_[std::size_t(by_key_[k - 1].second)].ordinal + 1;
}

std::vector<int> OpShiftTable::shift(int d) const {
  FSDP_CHECK(d >= 1, "a shift of at least one micro-batch");
  std::vector<int> out(ops_.size(), -1);
  // Sources in key order have targets (key + d) in key order too: one pass with a second cursor.
  std::size_t run = 0;  // first entry of key >= the target
  for (const auto& [key, id] : by_key_) {
    const OpKey& op = ops_[std::size_t(id)];
    if (!op.fits || op.ordinal >= (1 << kOrdinalBits) || op.micro_batch + std::int64_t(d) >= (1 << kMicroBatchBits))
      continue;
    const std::uint64_t later = key + std::uint64_t(d);
    while (run < by_key_.size() && by_key_[run].first < later) ++run;
    const std::size_t at = run + std::size_t(op.ordinal);
    if (at < by_key_.size() && by_key_[at].first == later) out[std::size_t(id)] = by_key_[at].second;
  }
  return out;
}

}  // namespace fsdpx
