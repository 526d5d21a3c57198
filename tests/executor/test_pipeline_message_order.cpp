// tests/executor/test_pipeline_message_order.cpp — what the CUDA backend's point-to-point needs of the
// lowered pipeline: NCCL pairs a send with the peer's receive in issue order per communicator (it has no
// tags), and the CUDA backend sends activations and activation gradients on a communicator each. So for
// every schedule, pp 2 and 4, and every (sender, receiver, payload), the messages the sender's role
// issues must be the ones the receiver's role takes, in the same order; the runtime's tags name them
// (micro-batch, sending virtual stage).
#include <doctest/doctest.h>

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "program/lower.h"
#include "tests/executor/pipeline_fixtures.h"

namespace fsdpx {
namespace {

using Channel = std::tuple<int, int, int>;  // sending role, receiving role, payload (0 activations, 1 gradients)
using Message = std::pair<int, int>;        // micro-batch, sending virtual stage

std::map<Channel, std::vector<Message>> messages(const StepProgram& prog, bool sends) {
  std::map<Channel, std::vector<Message>> out;
  for (std::size_t r = 0; r < prog.roles.size(); ++r)
    for (const Op& op : prog.roles[r].ops) {
      if (op.kind != (sends ? OpKind::send : OpKind::recv)) continue;
      const bool act = op.payload == Payload::activations;
      const int from = sends ? int(r) : op.peer_role, to = sends ? op.peer_role : int(r);
      const int stage = sends ? op.stage : act ? op.stage - 1 : op.stage + 1;
      out[{from, to, act ? 0 : 1}].push_back({op.micro_batch, stage});
    }
  return out;
}

TEST_CASE("pipeline: every schedule's sends and receives pair in issue order per peer and payload") {
  struct Case {
    PipelineSchedule schedule;
    int vpp;
  };
  for (const Case c : {Case{PipelineSchedule::gpipe, 1}, Case{PipelineSchedule::one_f_one_b, 1},
                       Case{PipelineSchedule::interleaved_1f1b, 2}, Case{PipelineSchedule::zero_bubble, 1}})
    for (int pp : {2, 4}) {
      test::PipePlan s;
      s.pp = pp, s.vpp = c.vpp, s.schedule = c.schedule;
      const StepProgram prog = lower(test::pipe_plan(s));
      CAPTURE(pp);
      CAPTURE(int(c.schedule));
      const auto sent = messages(prog, true), taken = messages(prog, false);
      CHECK(sent.size() >= std::size_t(2 * (pp - 1)));
      CHECK(sent == taken);
    }
}

}  // namespace
}  // namespace fsdpx
