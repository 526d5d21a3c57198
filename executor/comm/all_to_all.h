// executor/comm/all_to_all.h — all-to-all and its variable-count form (MPI_Alltoall / MPI_Alltoallv; NCCL
// builds them from grouped ncclSend/ncclRecv, nccl-tests src/alltoall.cu) on any host communicator, from its
// buffered point-to-point sends: every rank posts its chunks to each peer, then receives theirs in rank
// order, so the result does not depend on timing. The token dispatch and combine of expert parallelism
// (program/moe_block.h) are this exchange on the ep group. Leaves out overlapping the exchange with compute.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/comm/communicator.h"

namespace fsdpx {

// in [size·count] -> out [size·count]: chunk p of rank r's input lands as chunk r of rank p's output.
// `tag` keeps the exchange apart from the group's other point-to-point streams.
template <class T>
void all_to_all(Communicator& c, const T* in, T* out, std::int64_t count, int tag);

// The variable form: rank r sends send_counts[p] elements to rank p, its chunks back to back in `in` in rank
// order; returns recv_counts (recv_counts[p] = rank p's send_counts[r], learned by an all-gather of the
// counts) and fills `out` with the received chunks back to back in rank order (resized to their sum).
template <class T>
std::vector<std::int64_t> all_to_allv(Communicator& c, const T* in, const std::vector<std::int64_t>& send_counts,
                                      std::vector<T>& out, int tag);

// The variable form when both sides know the counts already (expert parallelism exchanges its per-expert
// row counts first): rank r sends send_counts[p] elements to rank p and receives recv_counts[p] from it
// into `out` [Σ recv_counts], chunks back to back in rank order. recv_counts[p] must equal rank p's
// send_counts[r]; a mismatch fails the receive (Communicator::recv checks the count).
template <class T>
void all_to_allv(Communicator& c, const T* in, const std::vector<std::int64_t>& send_counts, T* out,
                 const std::vector<std::int64_t>& recv_counts, int tag);

}  // namespace fsdpx
