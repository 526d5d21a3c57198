// executor/session/batch_recorder.h — `fsdpx run --dump-batches`: the token batches a run consumed, recorded as the
// trainer draws them and written as one safetensors I32 tensor "tokens" [steps, global_batch, seq+1]
// (row b of step s is sequence b of that step's global batch: inputs row[:seq], targets row[1:]), so
// that another program can replay the exact data. Leaves out batches of steps that failed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/runtime/train_state.h"

namespace fsdpx {

// A DataSource that forwards to `inner` and keeps each distinct global batch once (every rank asks
// for the same batch; the trainer calls one at a time, so no locking is needed).
class BatchRecorder final : public DataSource {
 public:
  BatchRecorder(std::shared_ptr<DataSource> inner, std::int64_t global_batch, std::int64_t seq)
      : inner_(std::move(inner)), global_batch_(global_batch), seq_(seq) {}
  void global_batch(const DataPosition& position, std::int64_t global_batch, std::int64_t seq,
                    std::vector<std::int32_t>& tokens) override;
  std::string describe() const override { return inner_->describe(); }

  // Writes the first `steps` recorded batches (in the order drawn) to `path`, atomically.
  void write(const std::string& path, std::int64_t steps) const;

 private:
  std::shared_ptr<DataSource> inner_;
  std::vector<std::uint64_t> positions_;            // next_sample of each recorded batch
  std::vector<std::vector<std::int32_t>> batches_;  // [global_batch × (seq + 1)] each
  std::int64_t global_batch_, seq_;
};

}  // namespace fsdpx
