// executor/comm/thread_communicator.cpp — the thread communicator's collectives. Each collective is
// publish -> barrier -> read peers' buffers -> barrier, so no rank reuses or frees a buffer a peer still
// reads. Sums run in rank order 0..n-1 for every element. Leaves out chunked/pipelined algorithms: on
// one host a direct read of every peer is both simplest and fast enough for tests.
#include "executor/comm/thread_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/comm/rank_order_sum.h"

namespace fsdpx {
namespace {

ThreadSlot make_slot(int op, std::int64_t count, ElemType t, int root, const void* in, void* out) {
  ThreadSlot s;
  s.op = op;
  s.what = collective_op_name(op);
  s.count = count;
  s.type = t;
  s.root = root;
  s.in = in;
  s.out = out;
  return s;
}

// The ranks' inputs of the collective in progress, in rank order (the sources of a reduction).
std::vector<const void*> inputs(const std::vector<ThreadSlot>& slots) {
  std::vector<const void*> in;
  for (const ThreadSlot& s : slots) in.push_back(s.in);
  return in;
}

// Element range of rank r's share of `count` elements split over n ranks.
std::pair<std::int64_t, std::int64_t> chunk_of(std::int64_t count, int n, int r) {
  const std::int64_t per = (count + n - 1) / n;
  const std::int64_t b = std::min(count, per * r);
  return {b, std::min(count, b + per)};
}

}  // namespace

void AbortState::abort(const std::string& msg) {
  std::vector<std::weak_ptr<ThreadGroup>> groups;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_) {
      aborted_ = true;
      msg_ = msg;
    }
    groups = groups_;
  }
  // Notify under each group's mutex (inside wake_all) so no waiter misses the flag.
  for (auto& w : groups)
    if (auto g = w.lock()) g->wake_all();
}

bool AbortState::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

std::string AbortState::message() const {
  std::lock_guard<std::mutex> lock(mu_);
  return msg_;
}

void AbortState::add_group(const std::weak_ptr<ThreadGroup>& g) {
  std::lock_guard<std::mutex> lock(mu_);
  groups_.push_back(g);
}

const char* p2p_mode_name(P2PMode m) { return m == P2PMode::buffered ? "buffered" : "rendezvous"; }

ThreadGroup::ThreadGroup(int size, double timeout_s, std::shared_ptr<AbortState> family, P2PMode p2p)
    : size_(size), timeout_s_(timeout_s), family_(std::move(family)), p2p_(p2p), slots_(static_cast<std::size_t>(size)) {
  FSDP_CHECK(size >= 1, "ThreadGroup: size must be >= 1");
  FSDP_CHECK(timeout_s > 0, "ThreadGroup: timeout must be positive");
  if (!family_) family_ = std::make_shared<AbortState>();
}

std::shared_ptr<ThreadGroup> ThreadGroup::create(int size, double timeout_s, std::shared_ptr<AbortState> family,
                                                 P2PMode p2p) {
  auto g = std::make_shared<ThreadGroup>(size, timeout_s, std::move(family), p2p);
  g->family_->add_group(g);
  return g;
}

void ThreadGroup::wake_all() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mail_mu_);
  mail_cv_.notify_all();
}

std::uint64_t ThreadGroup::post(int from, int to, int tag, ElemType t, const void* buf, std::int64_t count) {
  family_->throw_if_aborted();
  Letter letter{t, count, std::vector<char>(elem_bytes(t) * static_cast<std::size_t>(count))};
  if (count > 0) std::memcpy(letter.bytes.data(), buf, letter.bytes.size());
  std::lock_guard<std::mutex> lock(mail_mu_);
  Mailbox& box = mail_[{from, to, tag}];
  box.letters.push_back(std::move(letter));
  mail_cv_.notify_all();
  return ++box.posted;
}

void ThreadGroup::wait_taken(int from, int to, int tag, std::uint64_t seq) {
  std::unique_lock<std::mutex> lock(mail_mu_);
  Mailbox& box = mail_[{from, to, tag}];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  mail_cv_.wait_until(lock, deadline, [&] { return box.taken >= seq || family_->aborted(); });
  family_->throw_if_aborted();
  if (box.taken >= seq) return;
  const std::string msg = fmt::format("rank {}: timed out after {} s waiting for rank {} to receive message {} (tag {}) "
                                      "of a rendezvous send", from, timeout_s_, to, seq, tag);
  lock.unlock();  // abort() takes this group's mutexes to notify
  family_->fail(msg);
}

std::vector<std::vector<char>> ThreadGroup::drain(int to, int tag) {
  std::vector<std::vector<char>> out;
  std::lock_guard<std::mutex> lock(mail_mu_);
  for (auto& [key, box] : mail_) {
    if (std::get<1>(key) != to || std::get<2>(key) != tag) continue;
    for (Letter& l : box.letters) out.push_back(std::move(l.bytes));
    box.taken += box.letters.size();
    box.letters.clear();
  }
  return out;
}

void ThreadGroup::take(int from, int to, int tag, ElemType t, void* buf, std::int64_t count) {
  std::unique_lock<std::mutex> lock(mail_mu_);
  Mailbox& mailbox = mail_[{from, to, tag}];
  std::deque<Letter>& box = mailbox.letters;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  mail_cv_.wait_until(lock, deadline, [&] { return !box.empty() || family_->aborted(); });
  family_->throw_if_aborted();
  std::string msg;
  if (box.empty()) {
    msg = fmt::format("rank {}: timed out after {} s waiting for a message from rank {} (tag {})", to, timeout_s_,
                      from, tag);
  } else if (box.front().type != t || box.front().count != count) {
    msg = fmt::format("rank {}: mismatched send_recv: rank {} sent {} elements (tag {}), the receive expects {}", to,
                      from, box.front().count, tag, count);
  } else {
    if (count > 0) std::memcpy(buf, box.front().bytes.data(), box.front().bytes.size());
    box.pop_front();
    ++mailbox.taken;
    mail_cv_.notify_all();  // a rendezvous sender waits for this
    return;
  }
  lock.unlock();  // abort() takes this group's mutexes to notify
  family_->fail(msg);
}

void ThreadGroup::arrive(int rank, const char* what) {
  std::unique_lock<std::mutex> lock(mu_);
  family_->throw_if_aborted();
  const std::uint64_t gen = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  cv_.wait_until(lock, deadline, [&] { return generation_ != gen || family_->aborted(); });
  if (generation_ != gen) return;  // the barrier completed; a later abort is seen at the next collective
  family_->throw_if_aborted();
  const std::string msg = fmt::format("rank {}: timed out after {} s waiting in {}", rank, timeout_s_, what);
  lock.unlock();  // abort() takes this group's mutex to notify
  family_->fail(msg);
}

void ThreadGroup::exchange(int rank, const ThreadSlot& s) {
  slots_[static_cast<std::size_t>(rank)] = s;
  arrive(rank, s.what);
  for (const ThreadSlot& o : slots_) {
    if (o.op == s.op && o.count == s.count && o.type == s.type && o.root == s.root) continue;
    const std::string msg = fmt::format("rank {}: mismatched collectives: {} (count {}) vs {} (count {})", rank,
                                        s.what, s.count, o.what, o.count);
    family_->fail(msg);
  }
}

ThreadGroup::Split ThreadGroup::split(int rank, int color, int key) {
  FSDP_CHECK(color >= 0, "split: color must be non-negative");
  ThreadSlot s;
  s.op = kSplit;
  s.what = collective_op_name(kSplit);
  s.color = color;
  s.key = key;
  exchange(rank, s);
  std::vector<std::pair<int, int>> members;  // (key, old rank) of my color
  for (int j = 0; j < size_; ++j)
    if (slots_[static_cast<std::size_t>(j)].color == color) members.emplace_back(slots_[static_cast<std::size_t>(j)].key, j);
  std::sort(members.begin(), members.end());
  const int leader = std::min_element(members.begin(), members.end(),
                                      [](auto& a, auto& b) { return a.second < b.second; })->second;
  if (leader == rank)
    slots_[static_cast<std::size_t>(rank)].child = ThreadGroup::create(static_cast<int>(members.size()), timeout_s_, family_, p2p_);
  arrive(rank, s.what);
  Split out{slots_[static_cast<std::size_t>(leader)].child, 0};
  while (members[static_cast<std::size_t>(out.rank)].second != rank) ++out.rank;
  arrive(rank, s.what);  // the leader's slot is not reused before everyone read it
  return out;
}

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  FSDP_CHECK(rank >= 0 && rank < group_->size(), "ThreadCommunicator: rank out of range");
}

void ThreadCommunicator::barrier() {
  ThreadSlot s;
  s.op = kBarrier;
  s.what = collective_op_name(kBarrier);
  group_->exchange(rank_, s);
  group_->arrive(rank_, s.what);
}

void ThreadCommunicator::all_gather_impl(const void* in, void* out, std::int64_t count, ElemType t) {
  ThreadSlot s = make_slot(kAllGather, count, t, 0, in, out);
  group_->exchange(rank_, s);
  const std::size_t bytes = elem_bytes(t) * static_cast<std::size_t>(count);
  const auto& slots = group_->slots();
  for (int j = 0; j < size(); ++j) {
    char* dst = static_cast<char*>(out) + bytes * static_cast<std::size_t>(j);
    if (dst != slots[static_cast<std::size_t>(j)].in) std::memmove(dst, slots[static_cast<std::size_t>(j)].in, bytes);
  }
  group_->arrive(rank_, s.what);
}

void ThreadCommunicator::reduce_scatter_impl(const void* in, void* out, std::int64_t count, ElemType t) {
  ThreadSlot s = make_slot(kReduceScatter, count, t, 0, in, out);
  group_->exchange(rank_, s);
  // In place (out == in + rank*count) is safe: each element is read from every rank before it is written,
  // and peers only read their own chunk of this rank's input.
  sum_in_rank_order(t, inputs(group_->slots()), count * rank_, count, out);
  group_->arrive(rank_, s.what);
}

void ThreadCommunicator::all_reduce_impl(void* buf, std::int64_t count, ElemType t) {
  ThreadSlot s = make_slot(kAllReduce, count, t, 0, buf, buf);
  group_->exchange(rank_, s);
  // Phase 1: each rank reduces its chunk into a private buffer; phase 2: everyone copies all chunks.
  const auto [b, e] = chunk_of(count, size(), rank_);
  std::vector<char> mine(elem_bytes(t) * static_cast<std::size_t>(e - b));
  sum_in_rank_order(t, inputs(group_->slots()), b, e - b, mine.data());
  group_->slots()[static_cast<std::size_t>(rank_)].aux = mine.data();
  group_->arrive(rank_, s.what);
  for (int j = 0; j < size(); ++j) {
    const auto [jb, je] = chunk_of(count, size(), j);
    if (je == jb) continue;  // fewer elements than ranks: this rank's chunk is empty (its aux is null)
    std::memcpy(static_cast<char*>(buf) + elem_bytes(t) * static_cast<std::size_t>(jb),
                group_->slots()[static_cast<std::size_t>(j)].aux, elem_bytes(t) * static_cast<std::size_t>(je - jb));
  }
  group_->arrive(rank_, s.what);  // `mine` stays alive until every peer copied it
}

void ThreadCommunicator::broadcast_impl(void* buf, std::int64_t count, int root, ElemType t) {
  FSDP_CHECK(root >= 0 && root < size(), "broadcast: root out of range");
  ThreadSlot s = make_slot(kBroadcast, count, t, root, buf, buf);
  group_->exchange(rank_, s);
  if (rank_ != root)
    std::memcpy(buf, group_->slots()[static_cast<std::size_t>(root)].in, elem_bytes(t) * static_cast<std::size_t>(count));
  group_->arrive(rank_, s.what);
}

void ThreadCommunicator::send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) {
  FSDP_CHECK(peer >= 0 && peer < size() && peer != rank_, "send: peer out of range or self");
  const std::uint64_t seq = group_->post(rank_, peer, tag, t, buf, count);
  if (group_->p2p_mode() == P2PMode::rendezvous) group_->wait_taken(rank_, peer, tag, seq);
}

void ThreadCommunicator::post_send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) {
  FSDP_CHECK(peer >= 0 && peer < size() && peer != rank_, "send: peer out of range or self");
  const std::uint64_t seq = group_->post(rank_, peer, tag, t, buf, count);
  if (group_->p2p_mode() == P2PMode::rendezvous) posted_.push_back({peer, tag, seq});
}

void ThreadCommunicator::wait_sends() {
  for (const Posted& p : posted_) group_->wait_taken(rank_, p.peer, p.tag, p.seq);
  posted_.clear();
}

void ThreadCommunicator::recv_impl(void* buf, std::int64_t count, ElemType t, int peer, int tag) {
  FSDP_CHECK(peer >= 0 && peer < size() && peer != rank_, "recv: peer out of range or self");
  group_->take(peer, rank_, tag, t, buf, count);
}

std::unique_ptr<Communicator> ThreadCommunicator::split(int color, int key) {
  auto [child, new_rank] = group_->split(rank_, color, key);
  return std::make_unique<ThreadCommunicator>(std::move(child), new_rank);
}

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int size, double timeout_s, P2PMode p2p) {
  auto group = ThreadGroup::create(size, timeout_s, nullptr, p2p);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < size; ++r) comms.push_back(std::make_unique<ThreadCommunicator>(group, r));
  return comms;
}

void run_rank_threads(int size, const std::function<void(int rank)>& body,
                      const std::function<std::string(int rank, const char* what)>& fail) {
  std::mutex mu;
  std::string first_error, first_abort;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const CommAborted& e) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_abort.empty()) first_abort = e.what();
      } catch (const std::exception& e) {
        const std::string msg = fail(r, e.what());
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.empty()) first_error = msg;
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!first_error.empty()) throw std::runtime_error(first_error);
  if (!first_abort.empty()) throw CommAborted(first_abort);
}

void run_rank_threads(int size, const std::function<void(int rank)>& body,
                      const std::function<void(const std::string& msg)>& abort_all) {
  run_rank_threads(size, body, [&](int r, const char* what) {
    std::string msg = fmt::format("rank {}: {}", r, what);
    abort_all(msg);
    return msg;
  });
}

void run_ranks(int size, const std::function<void(Communicator&)>& fn, double timeout_s) {
  auto comms = make_thread_communicators(size, timeout_s);
  run_rank_threads(
      size, [&](int r) { fn(*comms[static_cast<std::size_t>(r)]); },
      [&](const std::string& msg) { comms[0]->abort(msg); });
}

}  // namespace fsdpx
