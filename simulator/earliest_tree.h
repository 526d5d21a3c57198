// simulator/earliest_tree.h — the engine's next event over its instances: a tournament tree (a binary
// min-tree, each node the smaller of its two children) of one time per instance. Setting one instance's
// time costs log2(instances) steps, the earliest time is the root, and the instances at that time are
// listed in increasing order by descending only into subtrees that hold it: the same list a scan of
// every instance gives, without the scan at every event. Leaves out removal (an idle instance holds max).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace fsdpx::engine_detail {

class EarliestTree {
 public:
  using Time = std::int64_t;
  static constexpr Time kNever = std::numeric_limits<Time>::max();

  // `count` instances, every one at kNever.
  explicit EarliestTree(int count = 0) : count_(count) {
    while (leaves_ < count) leaves_ *= 2;
    node_.assign(std::size_t(2 * leaves_), kNever);
  }

  void set(int instance, Time t) {
    std::size_t k = std::size_t(leaves_ + instance);
    node_[k] = t;
    for (k /= 2; k >= 1; k /= 2) {
      const Time m = std::min(node_[2 * k], node_[2 * k + 1]);
      if (node_[k] == m) break;  // the ancestors hold the same minimum already
      node_[k] = m;
    }
  }

  Time get(int instance) const { return node_[std::size_t(leaves_ + instance)]; }
  Time earliest() const { return node_[1]; }

  // Replaces `out` with the instances whose time is earliest(), in increasing order: down the left child
  // that holds the time, else the right; a right child that holds it too waits on a stack (popped after
  // the left subtree, so leaves come out in increasing order; depth < 64 levels).
  void earliest_instances(std::vector<int>& out) const {
    out.clear();
    const Time t = node_[1];
    const std::size_t leaves = std::size_t(leaves_);
    std::array<std::size_t, 64> stack;
    int top = 0;
    stack[std::size_t(top++)] = 1;
    while (top > 0) {
      std::size_t k = stack[std::size_t(--top)];
      while (k < leaves) {  // every node on the way holds t, so one of its children does
        const bool left = node_[2 * k] == t;
        if (left && node_[2 * k + 1] == t) stack[std::size_t(top++)] = 2 * k + 1;
        k = left ? 2 * k : 2 * k + 1;
      }
      if (k - leaves < std::size_t(count_)) out.push_back(int(k - leaves));
    }
  }

 private:
  int count_ = 0;
  int leaves_ = 1;
  std::vector<Time> node_;  // node_[1] is the root; node k's children are 2k and 2k + 1
};

}  // namespace fsdpx::engine_detail
