// executor/comm/thread_communicator.h — an in-process Communicator: ranks are threads of one process
// sharing a ThreadGroup; collectives read the peers' buffers directly between barriers and sum in
// rank order 0..n-1, so results are bit-identical run to run (floating-point addition is not
// associative, so the order is fixed). A failing rank aborts the group family (the group and every group split from it), which
// wakes all waiters with its message; a barrier that waits longer than timeout_s aborts too, so a
// mismatched program ends with an error instead of a hang. Point-to-point messages are copied into the
// receiver's mailbox; in the default buffered mode a send never waits, in rendezvous mode (P2PMode) it
// returns only once the receiver took the message, as NCCL's sends larger than its buffers (a schedule
// whose sends and receives form a cycle then times out instead of passing). Leaves out overlap:
// collectives block.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "executor/comm/communicator.h"

namespace fsdpx {

class ThreadGroup;

// Point-to-point semantics: buffered (a send returns at once; MPI_Bsend) or rendezvous (a send returns
// once the receiver took the message; MPI_Ssend, NCCL's ncclSend beyond its internal buffers).
enum class P2PMode { buffered, rendezvous };
const char* p2p_mode_name(P2PMode m);

// Shared by a root group and every group split from it: one abort flag for the whole family.
class AbortState {
 public:
  void abort(const std::string& msg);
  bool aborted() const;
  std::string message() const;
  void add_group(const std::weak_ptr<ThreadGroup>& g);
  // Throws CommAborted once the family is aborted; fail(msg) aborts it first (the first message wins).
  void throw_if_aborted() const { if (aborted()) throw CommAborted("collective aborted: " + message()); }
  [[noreturn]] void fail(const std::string& msg) { abort(msg); throw CommAborted("collective aborted: " + msg); }

 private:
  mutable std::mutex mu_;
  bool aborted_ = false;
  std::string msg_;
  std::vector<std::weak_ptr<ThreadGroup>> groups_;
};

// What one rank published for the collective in progress. op, count, type and root must agree on all
// ranks; `what` names the op in messages (a string literal). The device thread communicator
// (executor/cuda/device_thread_communicator.h) uses its own op codes and points `aux` at its events.
struct ThreadSlot {
  int op = 0;
  const char* what = "";
  std::int64_t count = 0;
  ElemType type = ElemType::f32;
  int root = 0;
  const void* in = nullptr;
  void* out = nullptr;
  const void* aux = nullptr;  // all-reduce: this rank's reduced chunk
  int color = 0, key = 0;
  std::shared_ptr<ThreadGroup> child;  // split: set by the lowest rank of each color
};

class ThreadGroup : public std::enable_shared_from_this<ThreadGroup> {
 public:
  // Use create(); `family` is null for a root group.
  ThreadGroup(int size, double timeout_s, std::shared_ptr<AbortState> family, P2PMode p2p = P2PMode::buffered);
  static std::shared_ptr<ThreadGroup> create(int size, double timeout_s = 300.0,
                                             std::shared_ptr<AbortState> family = nullptr,
                                             P2PMode p2p = P2PMode::buffered);
  P2PMode p2p_mode() const { return p2p_; }  // groups split from this one inherit it

  int size() const { return size_; }
  double timeout_s() const { return timeout_s_; }
  const std::shared_ptr<AbortState>& family() const { return family_; }
  std::vector<ThreadSlot>& slots() { return slots_; }

  // Blocks until all ranks arrive; throws CommAborted if the family is aborted or on timeout.
  void arrive(int rank, const char* what);
  // Publishes `s` as this rank's slot, waits for all ranks and checks that every rank called the same op
  // with the same count, type and root; a mismatch aborts the family and throws CommAborted.
  void exchange(int rank, const ThreadSlot& s);
  // Collective: ranks with the same color (>= 0) form a child group of this family, ordered by
  // (key, old rank), as MPI_Comm_split and ncclCommSplit. Returns the child and this rank's rank in it.
  struct Split {
    std::shared_ptr<ThreadGroup> group;
    int rank = 0;
  };
  Split split(int rank, int color, int key);
  void abort(const std::string& msg) { family_->abort(msg); }
  void wake_all();  // called by AbortState::abort

  // Point to point: `post` copies the message into the mailbox of (from, to, tag) and returns its
  // sequence number there (1, 2, ...) without waiting; `take` waits (timeout_s, abort) for the oldest
  // message there and copies it out, failing the family when its count or type differ from the
  // receiver's; `wait_taken` waits (timeout_s, abort) until message `seq` of that mailbox was taken
  // (a rendezvous send: post, then wait_taken).
  std::uint64_t post(int from, int to, int tag, ElemType t, const void* buf, std::int64_t count);
  void take(int from, int to, int tag, ElemType t, void* buf, std::int64_t count);
  void wait_taken(int from, int to, int tag, std::uint64_t seq);
  // Removes and returns the bytes of every message to `to` with `tag` never taken (an aborted run), so
  // that a receiver whose letters own resources (the device communicator's staging memory) frees them.
  std::vector<std::vector<char>> drain(int to, int tag);

 private:
  int size_;
  double timeout_s_;
  std::shared_ptr<AbortState> family_;
  P2PMode p2p_;
  std::vector<ThreadSlot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  struct Letter {
    ElemType type = ElemType::f32;
    std::int64_t count = 0;
    std::vector<char> bytes;
  };
  struct Mailbox {
    std::deque<Letter> letters;  // in send order
    std::uint64_t posted = 0, taken = 0;
  };
  std::map<std::tuple<int, int, int>, Mailbox> mail_;  // (from, to, tag)
  std::mutex mail_mu_;
  std::condition_variable mail_cv_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank);
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  void abort(const std::string& msg) override { group_->abort(msg); }
  // Rendezvous mode: waits until the receivers took every post_send so far.
  void wait_sends() override;

 protected:
  void all_gather_impl(const void* in, void* out, std::int64_t count, ElemType t) override;
  void reduce_scatter_impl(const void* in, void* out, std::int64_t count, ElemType t) override;
  void all_reduce_impl(void* buf, std::int64_t count, ElemType t) override;
  void broadcast_impl(void* buf, std::int64_t count, int root, ElemType t) override;
  void send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) override;
  void recv_impl(void* buf, std::int64_t count, ElemType t, int peer, int tag) override;
  void post_send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) override;

 private:
  struct Posted {
    int peer, tag;
    std::uint64_t seq;
  };
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
  std::vector<Posted> posted_;  // post_sends not yet awaited (rendezvous mode)
};

// One communicator per rank of a new root group.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int size, double timeout_s = 300.0,
                                                                     P2PMode p2p = P2PMode::buffered);

// Runs body(r) on `size` threads, one per rank. A rank whose body throws anything but CommAborted calls
// fail(r, what), which aborts the rank's group and returns the error's message; after all threads end,
// the first such message is rethrown as std::runtime_error (or CommAborted when the only failures were
// aborts/timeouts). Shared by run_ranks, the Trainer's rank threads and the device thread communicator's
// tests.
void run_rank_threads(int size, const std::function<void(int rank)>& body,
                      const std::function<std::string(int rank, const char* what)>& fail);
// The same with the message "rank <r>: <what>", passed to abort_all.
void run_rank_threads(int size, const std::function<void(int rank)>& body,
                      const std::function<void(const std::string& msg)>& abort_all);

// Runs fn(comm) on `size` threads, one per rank. A rank that throws aborts the group with
// "rank <r>: <what>"; after all threads end, the first such error is rethrown as std::runtime_error
// (or CommAborted when the only failures were aborts/timeouts).
void run_ranks(int size, const std::function<void(Communicator&)>& fn, double timeout_s = 300.0);

}  // namespace fsdpx
