// executor/cuda/nccl_family.h — the NCCL state that NcclCommunicator (nccl_communicator.cpp) shares with
// the watchdog thread: NcclHandle (one ncclComm_t) and NcclFamily (the root and everything split from it:
// one abort flag, one watchdog, and one mutex that every NCCL call on any of its communicators holds,
// since NCCL wants no call in flight while ncclCommAbort runs and the watchdog polls from its own
// thread), plus the polling of non-blocking calls. Internal to fsdp_cuda; built only with NCCL.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nccl.h>

#include "executor/comm/watchdog.h"
#include "executor/cuda/nccl_communicator.h"

namespace fsdpx::cuda {

// "<ncclGetErrorString> (<ncclGetLastError>)".
std::string nccl_error(ncclResult_t r, ncclComm_t comm);

// One ncclComm_t, shared by its communicator, its family (abort) and the watchdog's polls. `mu` is the
// family's call mutex: hold it for every NCCL call on `comm`. `comm` is null once aborted or destroyed;
// `name` outlives the ncclConfig_t.commName that points at it.
struct NcclHandle {
  std::shared_ptr<std::mutex> mu;
  ncclComm_t comm = nullptr;
  std::string name;
};

// ncclCommAbort unless already gone; the family's call mutex must be held.
void abort_locked(NcclHandle& h);

// blocking = 0 (and the name, where NCCL >= 2.27 has commName).
ncclConfig_t nonblocking_config(const std::string& name);

enum class Ready { ok, error, timeout, gone };
struct WaitResult {
  Ready state = Ready::ok;
  std::string error;  // Ready::error: nccl_error of the final state
};

// `r` is what an NCCL call on `h` returned: polls ncclCommGetAsyncError until it leaves ncclInProgress
// (yielding, then sleeping 1 ms between polls), the deadline passes, or the handle is aborted (gone).
WaitResult wait_ready(NcclHandle& h, ncclResult_t r, double timeout_s);

// The watchdog's poll of one collective: the event recorded after it, then the communicator's error.
PollStatus poll_collective(NcclHandle& h, cudaEvent_t event, int device);

// The root communicator and every communicator split from it: one abort, one watchdog.
class NcclFamily {
 public:
  NcclFamily(int world_rank, NcclOptions options);
  // The watchdog's thread calls abort() on this object: stop it before any member goes.
  ~NcclFamily() { watchdog_.reset(); }
  NcclFamily(const NcclFamily&) = delete;
  NcclFamily& operator=(const NcclFamily&) = delete;

  int world_rank() const { return world_rank_; }
  const NcclOptions& options() const { return options_; }
  Watchdog* watchdog() const { return watchdog_.get(); }  // null when collective_timeout_s <= 0
  void start_watchdog() {
    if (watchdog_) watchdog_->start();
  }

  // A handle for a new communicator of this family (comm still null: the caller creates it).
  std::shared_ptr<NcclHandle> make_handle(const std::string& name) const;
  // After the handle's communicator was created; one made while the family was aborted is aborted.
  void add(const std::shared_ptr<NcclHandle>& h);
  // Once: prints the message, aborts every live communicator (parents before children, as NCCL asks
  // after a split), then calls options().on_abort. Later calls do nothing.
  void abort(const std::string& msg);
  bool aborted() const;
  std::string message() const;

 private:
  const int world_rank_;
  const NcclOptions options_;
  const std::shared_ptr<std::mutex> calls_mu_ = std::make_shared<std::mutex>();
  mutable std::mutex mu_;  // aborted_, message_, members_
  bool aborted_ = false;
  std::string message_;
  std::vector<std::weak_ptr<NcclHandle>> members_;
  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace fsdpx::cuda
