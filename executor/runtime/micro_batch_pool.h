// executor/runtime/micro_batch_pool.h — the activations of every micro-batch a rank has in flight, for
// either backend's model type: one Model (the activations of one micro-batch) per micro-batch from its
// first forward on this rank to its last backward, taken from a pool and returned to it. Without
// pipelining one micro-batch is in flight at a time; GPipe keeps all of a step's, 1F1B at most pp − rank
// (Narayanan et al. 2021, §2.2). A model is finished when every segment it ran forward has finished its
// backward (or zero-bubble weight pass); it stays readable (the input gradient still goes to the previous
// stage) until a micro-batch not in flight needs a model. Leaves out sharing buffers between models.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

template <class Model>
class MicroBatchPool {
 public:
  explicit MicroBatchPool(std::function<std::unique_ptr<Model>()> make) : make_(std::move(make)) {}

  // The model of micro-batch `mb`; one not in flight takes a model from the pool (finished ones return
  // to it first).
  Model& at(int mb) { return *models_[std::size_t(slot(mb))]; }
  // The pool slot of `mb`'s model (taking one as at() does), for state a backend keeps per model.
  int slot(int mb) {
    auto it = active_.find(mb);
    if (it != active_.end()) return it->second.model;
    for (auto f = active_.begin(); f != active_.end();) {
      if (!f->second.finished) {
        ++f;
        continue;
      }
      free_.push_back(f->second.model);
      f = active_.erase(f);
    }
    if (free_.empty()) {
      models_.push_back(make_());
      free_.push_back(int(models_.size()) - 1);
    }
    it = active_.emplace(mb, Active{free_.back(), 0, false}).first;
    free_.pop_back();
    return it->second.model;
  }
  // The model of micro-batch `mb`, in flight or finished (FSDP_CHECK otherwise).
  const Model& get(int mb) const { return *models_[std::size_t(active(mb).model)]; }
  // A segment's forward ran / its backward (weight pass) finished; the last one finishes the model.
  void forward_done(int mb) {
    Active& a = active(mb);
    ++a.pending;
    a.finished = false;
  }
  void backward_done(int mb) {
    Active& a = active(mb);
    FSDP_CHECK(a.pending > 0, fmt::format("MicroBatchPool: a backward of micro-batch {} without its forward", mb));
    a.finished = --a.pending == 0;
  }
  int pool_size() const { return int(models_.size()); }

 private:
  struct Active {
    int model = 0;
    int pending = 0;  // segments run forward whose backward has not finished
    bool finished = false;
  };
  Active& active(int mb) { return const_cast<Active&>(std::as_const(*this).active(mb)); }
  const Active& active(int mb) const {
    auto it = active_.find(mb);
    FSDP_CHECK(it != active_.end(), fmt::format("MicroBatchPool: micro-batch {} has no model", mb));
    return it->second;
  }

  std::function<std::unique_ptr<Model>()> make_;
  std::vector<std::unique_ptr<Model>> models_;
  std::vector<int> free_;
  std::map<int, Active> active_;  // by micro-batch: in flight or finished
};

}  // namespace fsdpx
