// executor/cpu_backend/micro_batch_models.h — the CPU model's activations for every micro-batch a rank has
// in flight: one Transformer (the activations of one micro-batch) per micro-batch from its first forward
// on this rank to its last backward, taken from a pool and returned to it. Without pipelining one
// micro-batch is in flight at a time; GPipe keeps all of a step's, 1F1B at most pp − rank (Narayanan et
// al. 2021, §2.2). A model is finished when every segment it ran forward has finished its backward (or
// zero-bubble weight pass); it stays readable (the input gradient still goes to the previous stage)
// until a micro-batch not in flight needs a model. Leaves out sharing buffers between models.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "core/plan.h"
#include "executor/model/transformer.h"

namespace fsdpx {

class MicroBatchModels {
 public:
  MicroBatchModels(const Plan& plan, ModelOptions options);

  // The model of micro-batch `mb`; one not in flight takes a model from the pool (finished ones return
  // to it first).
  Transformer<float>& at(int mb);
  // The model of micro-batch `mb`, in flight or finished (FSDP_CHECK otherwise).
  const Transformer<float>& get(int mb) const;
  // A segment's forward ran / its backward (weight pass) finished; the last one finishes the model.
  void forward_done(int mb);
  void backward_done(int mb);
  int pool_size() const { return int(models_.size()); }

 private:
  struct Active {
    int model = 0;
    int pending = 0;  // segments run forward whose backward has not finished
    bool finished = false;
  };
  Active& active(int mb);
  const Active& active(int mb) const;

  Plan plan_;
  ModelOptions options_;
  std::vector<std::unique_ptr<Transformer<float>>> models_;
  std::vector<int> free_;
  std::map<int, Active> active_;  // by micro-batch: in flight or finished
};

}  // namespace fsdpx
