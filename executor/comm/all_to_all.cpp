// executor/comm/all_to_all.cpp — all-to-all(v) from buffered sends and blocking receives (see all_to_all.h).
#include "executor/comm/all_to_all.h"

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {
namespace {

// Sends chunk p (send_off[p], send_counts[p]) to every peer p, copies its own, then receives every peer's
// chunk into (recv_off[p], recv_counts[p]) in rank order. Empty chunks are neither sent nor received: both
// sides know the count.
template <class T>
void exchange(Communicator& c, const T* in, const std::vector<std::int64_t>& send_counts, T* out,
              const std::vector<std::int64_t>& recv_counts, int tag) {
  const int n = c.size(), me = c.rank();
  std::vector<std::int64_t> send_off(std::size_t(n), 0), recv_off(std::size_t(n), 0);
  for (int p = 1; p < n; ++p) {
    send_off[std::size_t(p)] = send_off[std::size_t(p - 1)] + send_counts[std::size_t(p - 1)];
    recv_off[std::size_t(p)] = recv_off[std::size_t(p - 1)] + recv_counts[std::size_t(p - 1)];
  }
  for (int p = 0; p < n; ++p)
    if (p != me && send_counts[std::size_t(p)] > 0) c.send(in + send_off[std::size_t(p)], send_counts[std::size_t(p)], p, tag);
  FSDP_CHECK(send_counts[std::size_t(me)] == recv_counts[std::size_t(me)], "all_to_all: own chunk size mismatch");
  std::copy_n(in + send_off[std::size_t(me)], send_counts[std::size_t(me)], out + recv_off[std::size_t(me)]);
  for (int p = 0; p < n; ++p)
    if (p != me && recv_counts[std::size_t(p)] > 0) c.recv(out + recv_off[std::size_t(p)], recv_counts[std::size_t(p)], p, tag);
}

}  // namespace

template <class T>
void all_to_all(Communicator& c, const T* in, T* out, std::int64_t count, int tag) {
  const std::vector<std::int64_t> counts(std::size_t(c.size()), count);
  exchange(c, in, counts, out, counts, tag);
}

template <class T>
std::vector<std::int64_t> all_to_allv(Communicator& c, const T* in, const std::vector<std::int64_t>& send_counts,
                                      std::vector<T>& out, int tag) {
  const int n = c.size(), me = c.rank();
  FSDP_CHECK(std::int64_t(send_counts.size()) == n, "all_to_allv: one send count per rank");
  // Every rank's counts (doubles: exact below 2^53), row q = rank q's send counts.
  std::vector<double> mine(send_counts.begin(), send_counts.end()), all(std::size_t(n) * std::size_t(n));
  c.all_gather(mine.data(), all.data(), n);
  std::vector<std::int64_t> recv_counts(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) recv_counts[std::size_t(q)] = std::int64_t(all[std::size_t(q * n + me)]);
  std::int64_t total = 0;
  for (std::int64_t k : recv_counts) total += k;
  out.resize(std::size_t(total));
  exchange(c, in, send_counts, out.data(), recv_counts, tag);
  return recv_counts;
}

template <class T>
void all_to_allv(Communicator& c, const T* in, const std::vector<std::int64_t>& send_counts, T* out,
                 const std::vector<std::int64_t>& recv_counts, int tag) {
  FSDP_CHECK(std::int64_t(send_counts.size()) == c.size() && std::int64_t(recv_counts.size()) == c.size(),
             "all_to_allv: one send and one receive count per rank");
  exchange(c, in, send_counts, out, recv_counts, tag);
}

template void all_to_all<float>(Communicator&, const float*, float*, std::int64_t, int);
template void all_to_all<double>(Communicator&, const double*, double*, std::int64_t, int);
template std::vector<std::int64_t> all_to_allv<float>(Communicator&, const float*, const std::vector<std::int64_t>&,
                                                      std::vector<float>&, int);
template std::vector<std::int64_t> all_to_allv<double>(Communicator&, const double*, const std::vector<std::int64_t>&,
                                                       std::vector<double>&, int);
template void all_to_allv<float>(Communicator&, const float*, const std::vector<std::int64_t>&, float*,
                                 const std::vector<std::int64_t>&, int);
template void all_to_allv<double>(Communicator&, const double*, const std::vector<std::int64_t>&, double*,
                                  const std::vector<std::int64_t>&, int);

}  // namespace fsdpx
