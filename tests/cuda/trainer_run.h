// tests/cuda/trainer_run.h — a Trainer on the tests' hash token stream (tests/executor/trainer_fixtures.h)
// with the CPU backend or, with `cuda`, every rank of the plan as a thread on GPU 0, for the tests that
// compare the two backends step by step. Leaves out NCCL processes (tools/gpu_acceptance.sh).
#pragma once

#include <memory>

#include "executor/cuda_backend/cuda_backends.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx::cuda::test {

inline std::unique_ptr<Trainer> hash_data_trainer(const Plan& plan, bool cuda) {
  const auto data = std::make_shared<fsdpx::test::HashData>(plan.model.vocab);
  TrainerOptions o;
  o.cuda = cuda;
  return cuda ? std::make_unique<Trainer>(plan, data, o, in_process_cuda_backends(0))
              : std::make_unique<Trainer>(plan, data, o);
}

}  // namespace fsdpx::cuda::test
