// executor/cuda/nccl_communicator.h — the NCCL DeviceCommunicator: one rank per process (or per thread),
// created from the 128 bytes of an ncclUniqueId that a rendezvous elsewhere sends to every rank. Every
// communicator is non-blocking (ncclConfig_t.blocking = 0): init, split and every call that reports
// ncclInProgress are polled with ncclCommGetAsyncError until done, an error, or init_timeout_s, so a
// missing peer ends in an error naming the rank instead of a hang. Each collective is watched: an event
// recorded after it and ncclCommGetAsyncError are polled by a Watchdog (executor/comm/watchdog.h) that
// aborts the whole family (ncclCommAbort on the root and every communicator split from it) on an error
// or after collective_timeout_s. Built only when NCCL was found (FSDPX_HAVE_NCCL, cmake/cuda.cmake).
// Leaves out NCCL groups, user-buffer registration and ncclCommShrink/revoke recovery.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "executor/comm/nccl_version.h"
#include "executor/cuda/device_communicator.h"

namespace fsdpx::cuda {

// The bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES): made on one rank, sent to all by the rendezvous.
using NcclId = std::array<std::uint8_t, 128>;

struct NcclOptions {
  int device = 0;              // this rank's CUDA device
  std::string name = "world";  // the root group's name in messages
  // Init, split, dup, finalize, and collective calls that stay ncclInProgress (lazy connection setup
  // needs the peers): after this long the family is aborted and CommAborted thrown.
  double init_timeout_s = 300.0;
  // The watchdog's limit per collective, from enqueue to completion (PyTorch's default is 10 min);
  // <= 0 runs no watchdog and records no events.
  double collective_timeout_s = 600.0;
  double poll_interval_s = 0.1;  // the watchdog's polling period
  // Called once, after the family's communicators were aborted, with the one-line message (from the
  // watchdog thread or the thread that called abort). Must not destroy communicators.
  std::function<void(const std::string& msg)> on_abort;
};

// ncclGetUniqueId, on the rank that creates the group.
NcclId nccl_unique_id();

// This rank's communicator of a group of `nranks` (collective: every rank calls it with the same id).
// Throws CommAborted("collective aborted: rank <rank>: init of <name> ...") on an NCCL error or timeout.
std::unique_ptr<DeviceCommunicator> make_nccl_communicator(const NcclId& id, int nranks, int rank,
                                                           NcclOptions options);

// The linked NCCL library's version (ncclGetVersion; may differ from the nccl.h compiled against).
NcclVersion nccl_library_version();
// Several ranks may share one GPU: library >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE set non-zero.
bool nccl_multi_rank_gpu_allowed();
// "NCCL 2.28.9 (built against 2.28.9); several ranks per GPU: no (needs >= 2.30 and
// NCCL_MULTI_RANK_GPU_ENABLE=1)".
std::string nccl_describe();

}  // namespace fsdpx::cuda
