// executor/session/trainer.cpp — the Trainer: builds the runtime program, one RankRuntime per rank of the
// plan's mesh, runs each step on one thread per rank and turns a failing rank into one error for all
// ("rank r: what"): the failing rank aborts the communicator family, which wakes every peer blocked in
// a collective (executor/comm/thread_communicator.h), so no rank hangs.
#include "executor/session/trainer.h"

#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/comm/thread_communicator.h"
#include "executor/cpu/kernel_pool.h"
#include "executor/cpu/simd_level.h"
#include "executor/cpu_backend/cpu_rank_backend.h"
#include "executor/runtime/rank_runtime.h"

namespace fsdpx {

namespace {

thread_local int t_current_rank = -1;

// Sums the model's per-kernel times on rank 0 under the cost model's kernel names.
class KernelSink : public OpProfiler {
 public:
  void record(std::string_view op, int, double time_s) override {
    time_s_[std::string(op)] += time_s;
    ++calls_[std::string(op)];
  }
  std::map<std::string, double> time_s_;
  std::map<std::string, int> calls_;
};

// The plan modules of unit u with their place in its flat buffer (what checkpoints reshard by).
std::vector<UnitModule> unit_modules(const RuntimeProgram& rp, std::size_t u) {
  const FlatUnitLayout& f = rp.flats[u];
  std::vector<UnitModule> out;
  for (std::size_t k = 0; k < f.modules.size(); ++k) {
    const ModuleLayout& m = rp.layout.modules[std::size_t(f.modules[k])];
    out.push_back(UnitModule{m.name, f.module_offsets[k], m.numel});
  }
  return out;
}

}  // namespace

struct Trainer::Impl {
  RuntimeProgram rp;
  std::shared_ptr<DataSource> data;
  TrainerOptions options;
  cpu::ThreadBudget budget;  // kernel threads per rank thread
  std::vector<std::unique_ptr<cpu::KernelPool>> pools;  // per local rank (CPU backend), in `ranks` order
  KernelSink kernels;
  std::vector<std::unique_ptr<RankRuntime>> ranks;
  std::mutex data_mu;
  std::int64_t step = 0;
  DataPosition position;
  int profiled_steps = 0;
  std::string failure;  // set once a step failed: the runtime is then unusable

  // The position of `r` in `ranks`, and the local rank of global rank `rank` (the state of the shard
  // owners is only reachable when they run in this process).
  std::size_t local_index(const RankRuntime& r) const;
  RankRuntime& local_rank(int rank) const;
  // Runs fn on one thread per rank; rethrows the first rank error as "rank r: what".
  void on_ranks(const std::function<void(RankRuntime&)>& fn);
  void check_state(const TrainerState& s) const;
};

std::size_t Trainer::Impl::local_index(const RankRuntime& r) const {
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].get() == &r) return i;
  FSDP_CHECK(false, "Trainer: unknown rank runtime");
  return 0;
}

RankRuntime& Trainer::Impl::local_rank(int rank) const {
  for (const auto& r : ranks)
    if (r->rank() == rank) return *r;
  throw std::runtime_error(fmt::format("rank {} runs in another process: the sharded state of a multi-process run "
                                       "is not reachable from one process (not supported yet)", rank));
}

void Trainer::Impl::on_ranks(const std::function<void(RankRuntime&)>& fn) {
  if (!failure.empty()) throw std::runtime_error("trainer stopped after an earlier error: " + failure);
  std::mutex mu;
  std::string first_error, first_abort;
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    threads.emplace_back([&, rr = ranks[i].get(), pool = i < pools.size() ? pools[i].get() : nullptr] {
      t_current_rank = rr->rank();
      cpu::set_kernel_pool(pool);
      cpu::use_kernel_threads(budget.threads_per_rank);
      try {
        fn(*rr);
      } catch (const CommAborted& e) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_abort.empty()) first_abort = e.what();
      } catch (const std::exception& e) {
        const std::string msg = fmt::format("rank {}: {}", rr->rank(), e.what());
        rr->abort(msg);
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.empty()) first_error = msg;
      }
      t_current_rank = -1;
    });
  for (auto& t : threads) t.join();
  if (!first_error.empty()) {
    failure = first_error;
    throw std::runtime_error(first_error);
  }
  if (!first_abort.empty()) {
    failure = first_abort;
    throw CommAborted(first_abort);
  }
}

std::vector<std::unique_ptr<RankBackend>> make_cpu_backends(const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
  std::vector<std::unique_ptr<RankBackend>> out;
  auto comms = make_thread_communicators(rp.plan.parallelism.world_size());
  for (std::size_t r = 0; r < comms.size(); ++r)
    out.push_back(std::make_unique<CpuRankBackend>(rp, std::move(comms[r]), r == 0 ? rank0_profiler : nullptr));
  return out;
}

Trainer::Trainer(const Plan& plan, std::shared_ptr<DataSource> data, TrainerOptions options,
                 const RankBackendFactory& make_backends)
    : impl_(std::make_unique<Impl>()) {
  FSDP_CHECK(data != nullptr, "Trainer: data source is null");
  impl_->rp = make_runtime_program(plan, options.cuda ? ExecutorDevice::cuda : ExecutorDevice::cpu);
  impl_->data = std::move(data);
  impl_->options = options;
  if (!options.cuda) cpu::check_kernel_simd_support();
  auto backends = (make_backends ? make_backends : make_cpu_backends)(impl_->rp, options.profile ? &impl_->kernels : nullptr);
  FSDP_CHECK(!backends.empty(), "Trainer: no rank backends");
  std::vector<char> seen(std::size_t(plan.parallelism.world_size()), 0);
  for (auto& b : backends) {
    FSDP_CHECK(b->rank() >= 0 && b->rank() < int(seen.size()) && !seen[std::size_t(b->rank())]++,
               "Trainer: rank backends must have distinct ranks of the mesh");
    impl_->ranks.push_back(std::make_unique<RankRuntime>(impl_->rp, std::move(b), options));
  }
  impl_->budget = cpu::decide_thread_budget({options.threads, int(impl_->ranks.size()), options.processes_on_host});
  if (!options.cuda)
    for (std::size_t i = 0; i < impl_->ranks.size(); ++i)
      impl_->pools.push_back(std::make_unique<cpu::KernelPool>(impl_->budget.threads_per_rank));
  const std::uint64_t seed = plan.training.seed;
  impl_->on_ranks([seed](RankRuntime& r) {
    r.connect();
    r.init_params(seed);
  });
}

Trainer::~Trainer() = default;

StepMetrics Trainer::step() {
  Impl& im = *impl_;
  const auto start = std::chrono::steady_clock::now();
  std::vector<RankStepResult> results(im.ranks.size());
  const std::int64_t step = im.step;
  const DataPosition pos = im.position;
  im.on_ranks([&](RankRuntime& r) { results[im.local_index(r)] = r.run_step(step, pos, *im.data, im.data_mu); });
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
  const TrainingSettings& t = im.rp.plan.training;
  StepMetrics m;
  m.step = ++im.step;
  im.position.next_sample += std::uint64_t(t.global_batch);
  m.loss = results[0].loss_sum / double(im.rp.grad_accum * im.rp.dp_ranks);  // summed in rank order
  m.grad_norm = results[0].grad_norm;
  m.lr = results[0].lr;
  m.skipped = results[0].skipped;
  m.time_s = dt.count();
  m.tokens_per_s = m.time_s > 0 ? double(t.global_batch * t.seq) / m.time_s : 0;
  if (im.options.profile) ++im.profiled_steps;
  return m;
}

TrainerState Trainer::state() const {
  const Impl& im = *impl_;
  TrainerState s;
  s.step = im.step;
  s.data = im.position;
  s.seed = im.rp.plan.training.seed;
  s.dp_shard = im.rp.shard_count;
  s.dp_replicate = im.rp.plan.parallelism.data_parallel_ranks() / im.rp.shard_count;
  for (int r = 0; r < im.rp.shard_count; ++r) {  // the shard owners of replica 0: global ranks 0..S-1
    RankState rs;
    rs.rank = r;
    const RankBackend& owner = im.local_rank(r).backend();
    for (std::size_t u = 0; u < im.rp.flats.size(); ++u) {
      rs.units.push_back(owner.unit_state(int(u)));
      rs.units.back().modules = unit_modules(im.rp, u);
    }
    s.ranks.push_back(std::move(rs));
  }
  return s;
}

void Trainer::Impl::check_state(const TrainerState& s) const {
  auto bad = [](const std::string& path, const std::string& what) {
    throw ConfigError(fmt::format("trainer state: {}: {}", path, what));
  };
  if (s.dp_shard != rp.shard_count || int(s.ranks.size()) != rp.shard_count)
    bad("/dp_shard", fmt::format("{} shards expected (got {} with {} ranks); reshard the state first", rp.shard_count,
                                 s.dp_shard, s.ranks.size()));
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    if (s.ranks[r].units.size() != rp.flats.size())
      bad(fmt::format("/ranks/{}/units", r), fmt::format("{} units expected", rp.flats.size()));
    for (std::size_t u = 0; u < rp.flats.size(); ++u) {
      const UnitShardState& us = s.ranks[r].units[u];
      const auto n = std::size_t(rp.flats[u].shard_numel);
      if (us.unit_numel != rp.flats[u].numel || us.params.size() != n || us.exp_avg.size() != n ||
          us.exp_avg_sq.size() != n || us.shard_offset != std::int64_t(r) * rp.flats[u].shard_numel)
        bad(fmt::format("/ranks/{}/units/{}", r, u),
            fmt::format("a shard of {} elements at offset {} of a {}-element unit expected", n,
                        std::int64_t(r) * rp.flats[u].shard_numel, rp.flats[u].numel));
      if (!us.modules.empty() && us.modules != unit_modules(rp, u))
        bad(fmt::format("/ranks/{}/units/{}/modules", r, u), "another unit grouping; reshard the state first");
    }
  }
}

void Trainer::load_state(const TrainerState& s) {
  Impl& im = *impl_;
  im.check_state(s);
  for (auto& rank : im.ranks) {
    const int owner = im.rp.shard_count > 1 ? rank->shard_index() : 0;
    for (std::size_t u = 0; u < im.rp.flats.size(); ++u)
      rank->backend().load_unit_state(int(u), s.ranks[std::size_t(owner)].units[u]);
    rank->backend().copy_masters_to_replicas();
  }
  im.step = s.step;
  im.position = s.data;
}

namespace {

// The categories at the peak of the rank whose tracker (`of`) peaked highest.
MemoryPeakBytes worst_peak(const std::vector<std::unique_ptr<RankRuntime>>& ranks,
                           const MemoryTracker& (*of)(const RankRuntime&)) {
  const MemoryTracker* worst = &of(*ranks[0]);
  for (const auto& r : ranks)
    if (of(*r).peak_total_bytes() > worst->peak_total_bytes()) worst = &of(*r);
  MemoryPeakBytes out;
  for (int c = 0; c < kMemCategoryCount; ++c) out[mem_category_name(MemCategory(c))] = worst->at_peak()[std::size_t(c)];
  out["total"] = worst->peak_total_bytes();
  return out;
}

}  // namespace

MemoryPeakBytes Trainer::peak_memory() const {
  return worst_peak(impl_->ranks, [](const RankRuntime& r) -> const MemoryTracker& { return r.memory(); });
}

MemoryPeakBytes Trainer::program_peak_memory() const {
  return worst_peak(impl_->ranks, [](const RankRuntime& r) -> const MemoryTracker& { return r.program_memory(); });
}

OpProfile Trainer::profile() const {
  OpProfile p;
  p.op_time_s = impl_->ranks[0]->op_time_s();
  p.kernel_time_s = impl_->kernels.time_s_;
  p.kernel_calls = impl_->kernels.calls_;
  p.steps = impl_->profiled_steps;
  return p;
}

std::vector<float> Trainer::gather_full_params() const {
  const RuntimeProgram& rp = impl_->rp;
  std::vector<float> full(std::size_t(rp.layout.total), 0.0f);
  for (std::size_t u = 0; u < rp.flats.size(); ++u) {
    const FlatUnitLayout& f = rp.flats[u];
    std::vector<float> unit(std::size_t(f.padded_numel));
    for (int r = 0; r < rp.shard_count; ++r) {
      const std::vector<float> shard = impl_->local_rank(r).backend().unit_state(int(u)).params;
      std::copy(shard.begin(), shard.end(), unit.begin() + std::int64_t(r) * f.shard_numel);
    }
    for (std::size_t k = 0; k < f.modules.size(); ++k) {
      const ModuleLayout& m = rp.layout.modules[std::size_t(f.modules[k])];
      std::copy_n(unit.begin() + f.module_offsets[k], m.numel, full.begin() + m.offset);
    }
  }
  return full;
}

const Plan& Trainer::plan() const { return impl_->rp.plan; }

const cpu::ThreadBudget& Trainer::thread_budget() const { return impl_->budget; }

int Trainer::current_rank() { return t_current_rank; }

}  // namespace fsdpx
