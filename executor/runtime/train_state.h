// executor/runtime/train_state.h — the state of a training run that survives a step, shared by the
// runtime, the backends, checkpoints and data: the sharded optimizer state of every unit on every shard
// owner (fp32 masters and Adam moments), the step, the data position and the seed, and the source of
// token batches that the data position indexes, and fp16's loss scaler. Leaves out the unsharded buffers and activations (they
// live within a step) and the learning-rate schedule (a function of the step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "executor/runtime/loss_scaler.h"

namespace fsdpx {

// Where the next sample comes from: the data source is deterministic in (seed, position), so saving
// the position is enough to resume bit-identically.
struct DataPosition {
  std::uint64_t next_sample = 0;  // index of the first sequence of the next global batch
};

// One plan module inside a unit's flat buffer (executor/runtime/param_layout.h FlatUnitLayout).
struct UnitModule {
  std::string name;         // plan module name ("embedding", "block.3", ...; core/plan.h module_names)
  std::int64_t offset = 0;  // first element of the module inside the unit
  std::int64_t numel = 0;   // elements of the module (0 for a head tied to the embedding)
  bool operator==(const UnitModule&) const = default;
};

// One FSDP unit's optimizer state on one rank: its shard of the flat (padded) unit in fp32.
struct UnitShardState {
  std::int64_t unit_numel = 0;    // unpadded elements of the whole unit
  std::int64_t shard_offset = 0;  // first element of this shard in the unit
  // The modules the unit holds, in flat-buffer order, tiling [0, unit_numel); the same on every rank.
  // Empty when unknown: states read from checkpoints of format 1 (executor/checkpoint/reshard.h).
  std::vector<UnitModule> modules;
  std::vector<float> params;      // fp32 master weights of the shard (padding elements included, 0)
  std::vector<float> exp_avg;     // Adam m
  std::vector<float> exp_avg_sq;  // Adam v
};

// LoRA adapters (executor/model/lora.h): the whole flat buffer, identical on every rank; empty without LoRA.
struct AdapterState {
  std::vector<float> params, exp_avg, exp_avg_sq;
};

struct RankState {
  int rank = 0;  // shard index: the global rank of the shard's owner in replica 0 without pipelining
  std::vector<UnitShardState> units;
};

// Everything a checkpoint holds. `ranks` has one entry per data-parallel shard (shard order), each with
// every unit, whichever pipeline stage holds it.
struct TrainerState {
  std::int64_t step = 0;  // optimizer steps done
  DataPosition data;
  std::uint64_t seed = 0;
  int dp_shard = 1;      // shards of the run: its shard group's ranks (dp_shard x cp), 1 under DDP
  int dp_replicate = 1;
  std::vector<RankState> ranks;  // replicas hold identical copies; only replica 0 is saved
  AdapterState adapters;         // LoRA
  std::optional<LossScalerState> loss_scaler;  // fp16 loss scaling: the same on every rank; empty without
};

// Source of token batches: `global_batch` sequences of seq+1 tokens starting at `position`. The Trainer
// calls it from every rank thread once per step, one call at a time (implementations need not be
// thread-safe); each rank takes its slice of the global batch.
class DataSource {
 public:
  virtual ~DataSource() = default;
  // Fills tokens [global_batch × (seq + 1)]; the same call always yields the same tokens.
  virtual void global_batch(const DataPosition& position, std::int64_t global_batch, std::int64_t seq,
                            std::vector<std::int32_t>& tokens) = 0;
  virtual std::string describe() const = 0;
};

}  // namespace fsdpx
