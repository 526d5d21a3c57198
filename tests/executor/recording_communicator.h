// tests/executor/recording_communicator.h — a host communicator that records every collective and
// message a rank issues (kind, nccl-tests' S in bytes, the group's global ranks, peer and tag) and
// forwards it to the communicator it wraps. Splits learn their members by an all-gather of (color, key)
// on the wrapped parent, which is not recorded. For the tests that check the executor against the step
// program op by op; leaves out timing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "executor/comm/communicator.h"

namespace fsdpx::test {

struct IssuedCall {
  Collective kind = Collective::all_gather;
  double bytes = 0;          // nccl-tests' S: all-gather output, reduce-scatter input, all-reduce buffer, message
  std::vector<int> members;  // global ranks of the group, in group order
  int peer = -1, tag = -1;   // send and recv: the peer's global rank and the tag
};

// Per global rank, the calls in issue order.
struct CallLog {
  std::mutex mu;
  std::vector<std::vector<IssuedCall>> by_rank;
  void add(int rank, IssuedCall c) {
    std::lock_guard<std::mutex> lock(mu);
    by_rank[std::size_t(rank)].push_back(std::move(c));
  }
};

class RecordingCommunicator : public Communicator {
 public:
  RecordingCommunicator(std::unique_ptr<Communicator> inner, std::vector<int> members, CallLog* log)
      : inner_(std::move(inner)), members_(std::move(members)), log_(log) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void barrier() override { inner_->barrier(); }
  void abort(const std::string& msg) override { inner_->abort(msg); }

  std::unique_ptr<Communicator> split(int color, int key) override {
    std::vector<double> mine{double(color), double(key)}, all(std::size_t(2 * size()));
    inner_->all_gather(mine.data(), all.data(), 2);
    std::vector<std::pair<int, int>> same;  // (key, old rank) of the ranks of this color
    for (int r = 0; r < size(); ++r)
      if (int(all[std::size_t(2 * r)]) == color) same.emplace_back(int(all[std::size_t(2 * r + 1)]), r);
    std::sort(same.begin(), same.end());
    std::vector<int> members;
    for (const auto& [k, r] : same) members.push_back(members_[std::size_t(r)]);
    return std::make_unique<RecordingCommunicator>(inner_->split(color, key), std::move(members), log_);
  }

 protected:
  void all_gather_impl(const void* in, void* out, std::int64_t count, ElemType t) override {
    record(Collective::all_gather, count * size(), t);
    if (t == ElemType::f32)
      inner_->all_gather(static_cast<const float*>(in), static_cast<float*>(out), count);
    else
      inner_->all_gather(static_cast<const double*>(in), static_cast<double*>(out), count);
  }
  void reduce_scatter_impl(const void* in, void* out, std::int64_t count, ElemType t) override {
    record(Collective::reduce_scatter, count * size(), t);
    if (t == ElemType::f32)
      inner_->reduce_scatter(static_cast<const float*>(in), static_cast<float*>(out), count);
    else
      inner_->reduce_scatter(static_cast<const double*>(in), static_cast<double*>(out), count);
  }
  void all_reduce_impl(void* buf, std::int64_t count, ElemType t) override {
    record(Collective::all_reduce, count, t);
    if (t == ElemType::f32)
      inner_->all_reduce(static_cast<float*>(buf), count);
    else
      inner_->all_reduce(static_cast<double*>(buf), count);
  }
  void broadcast_impl(void* buf, std::int64_t count, int root, ElemType t) override {
    record(Collective::broadcast, count, t);
    if (t == ElemType::f32)
      inner_->broadcast(static_cast<float*>(buf), count, root);
    else
      inner_->broadcast(static_cast<double*>(buf), count, root);
  }
  void send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) override {
    record(Collective::send_recv, count, t, peer, tag);
    if (t == ElemType::f32)
      inner_->send(static_cast<const float*>(buf), count, peer, tag);
    else
      inner_->send(static_cast<const double*>(buf), count, peer, tag);
  }
  void post_send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) override {
    record(Collective::send_recv, count, t, peer, tag);
    if (t == ElemType::f32)
      inner_->post_send(static_cast<const float*>(buf), count, peer, tag);
    else
      inner_->post_send(static_cast<const double*>(buf), count, peer, tag);
  }
  void wait_sends() override { inner_->wait_sends(); }
  void recv_impl(void* buf, std::int64_t count, ElemType t, int peer, int tag) override {
    record(Collective::send_recv, count, t, peer, tag);
    if (t == ElemType::f32)
      inner_->recv(static_cast<float*>(buf), count, peer, tag);
    else
      inner_->recv(static_cast<double*>(buf), count, peer, tag);
  }

 private:
  void record(Collective kind, std::int64_t elems, ElemType t, int peer = -1, int tag = -1) {
    const double elem_bytes = t == ElemType::f32 ? 4.0 : 8.0;
    const int global_peer = peer >= 0 ? members_[std::size_t(peer)] : -1;
    log_->add(members_[std::size_t(rank())], IssuedCall{kind, double(elems) * elem_bytes, members_, global_peer, tag});
  }
  std::unique_ptr<Communicator> inner_;
  std::vector<int> members_;
  CallLog* log_;
};

}  // namespace fsdpx::test
