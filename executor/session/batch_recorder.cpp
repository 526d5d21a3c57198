// executor/session/batch_recorder.cpp — recording and writing the consumed batches (see batch_recorder.h).
#include "executor/session/batch_recorder.h"

#include "core/errors.h"
#include "executor/checkpoint/safetensors.h"

namespace fsdpx {

void BatchRecorder::global_batch(const DataPosition& position, std::int64_t global_batch, std::int64_t seq,
                                 std::vector<std::int32_t>& tokens) {
  FSDP_CHECK(global_batch == global_batch_ && seq == seq_, "BatchRecorder: batch shape differs from the plan's");
  inner_->global_batch(position, global_batch, seq, tokens);
  if (!positions_.empty() && positions_.back() == position.next_sample) return;  // another rank's call
  positions_.push_back(position.next_sample);
  batches_.push_back(tokens);
}

void BatchRecorder::write(const std::string& path, std::int64_t steps) const {
  FSDP_CHECK(steps >= 0 && steps <= std::int64_t(batches_.size()), "BatchRecorder: fewer batches than steps");
  std::vector<std::int32_t> all;
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::vector<std::int32_t>& b = batches_[std::size_t(s)];
    all.insert(all.end(), b.begin(), b.end());
  }
  SafetensorsFile f;
  f.tensors.push_back(st_ints("tokens", {steps, global_batch_, seq_ + 1}, all));
  f.metadata = {{"format", "fsdpx-batches/1"},
                {"first_sample", std::to_string(positions_.empty() ? 0 : positions_.front())},
                {"data", inner_->describe()}};
  write_safetensors(path, f);
}

}  // namespace fsdpx
