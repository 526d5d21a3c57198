// executor/session/trainer.cpp — the Trainer: builds the runtime program, one RankRuntime per rank of the
// plan's mesh, runs each step on one thread per rank and turns a failing rank into one error for all
// ("rank r: what"): the failing rank aborts the communicator family, which wakes every peer blocked in
// a collective (executor/comm/thread_communicator.h), so no rank hangs.
#include "executor/session/trainer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/comm/thread_communicator.h"
#include "executor/cpu/blas_loader.h"
#include "executor/cpu/kernel_pool.h"
#include "executor/cpu/simd_level.h"
#include "executor/cpu_backend/cpu_rank_backend.h"
#include "executor/runtime/rank_runtime.h"
#include "executor/session/expert_state.h"
#include "program/group_members.h"

namespace fsdpx {

namespace {

thread_local int t_current_rank = -1;

// Sums the model's per-kernel times on rank 0 under the cost model's kernel names, and its TP/CP
// collectives under their names.
class KernelSink : public OpProfiler {
 public:
  void record(std::string_view op, int, double time_s) override {
    time_s_[std::string(op)] += time_s;
    ++calls_[std::string(op)];
  }
  void record_collective(std::string_view name, double time_s) override {
    collective_time_s_[std::string(name)] += time_s;
    ++collective_calls_[std::string(name)];
  }
  std::map<std::string, double> time_s_, collective_time_s_;
  std::map<std::string, int> calls_, collective_calls_;
};

// The plan modules of unit u with their place in its flat buffer of the full model (what checkpoints
// reshard by).
std::vector<UnitModule> unit_modules(const RuntimeProgram& rp, std::size_t u) {
  const FlatUnitLayout& f = rp.full_flats[u];
  std::vector<UnitModule> out;
  for (std::size_t k = 0; k < f.modules.size(); ++k) {
    const ModuleLayout& m = rp.layout.modules[std::size_t(f.modules[k])];
    out.push_back(UnitModule{m.name, f.module_offsets[k], m.numel});
  }
  return out;
}

// Element of unit u of the full model (full_flats) that each element of tp rank t's unit (flats,
// unpadded) is.
std::vector<std::int64_t> unit_full_elements(const RuntimeProgram& rp, std::size_t u, int t) {
  const FlatUnitLayout& f = rp.flats[u];
  const ParamLayout& local = rp.tp_layouts[std::size_t(t)];
  std::vector<std::int64_t> out(std::size_t(f.numel));
  for (std::size_t k = 0; k < f.modules.size(); ++k) {
    const ModuleLayout& m = local.modules[std::size_t(f.modules[k])];
    for (std::int64_t e = 0; e < m.numel; ++e)
      out[std::size_t(f.module_offsets[k] + e)] = rp.full_flats[u].module_offsets[k] + m.full_element(e);
  }
  return out;
}

// The three fp32 vectors of a shard state, addressed together.
std::array<std::vector<float>*, 3> fields(UnitShardState& s) { return {&s.params, &s.exp_avg, &s.exp_avg_sq}; }
std::array<const std::vector<float>*, 3> fields(const UnitShardState& s) {
  return {&s.params, &s.exp_avg, &s.exp_avg_sq};
}

}  // namespace

struct Trainer::Impl {
  RuntimeProgram rp;
  std::shared_ptr<DataSource> data;
  TrainerOptions options;
  cpu::ThreadBudget budget;  // kernel threads per rank thread
  std::vector<std::unique_ptr<cpu::KernelPool>> pools;  // per local rank (any backend), in `ranks` order
  KernelSink kernels;
  std::vector<std::unique_ptr<RankRuntime>> ranks;
  std::mutex data_mu;
  std::int64_t step = 0;
  DataPosition position;
  int profiled_steps = 0;
  double init_params_s = 0;  // the constructor's connect and init_params, wall time
  std::string failure;  // set once a step failed: the runtime is then unusable

  std::size_t local_index(const RankRuntime& r) const;  // the position of `r` in `ranks`
  RankRuntime* find_local(int rank) const;  // nullptr when global rank `rank` runs in another process
  // The global rank holding shard `shard` (of the dp_shard x cp shard group) of tp rank `tp`'s slices of
  // `unit` (replica 0, the pipeline rank of the unit's stage).
  int owner_rank(std::size_t unit, int shard, int tp) const;
  // Runs fn on one thread per rank; rethrows the first rank error as "rank r: what".
  void on_ranks(const std::function<void(RankRuntime&)>& fn);
  void check_state(const TrainerState& s) const;
  TrainerState header() const;  // step, data position, seed and degrees; no ranks
  // Model parallelism: the full model's shards of the owners this process hosts (all with one process); a
  // collective over the processes when some ranks run elsewhere.
  TrainerState model_parallel_state();
  void for_each_holder(std::size_t u, const std::function<void(int, const std::vector<std::int64_t>&)>& fn) const;
  std::vector<std::uint64_t> sum_words(const std::vector<std::uint64_t>& words);  // Trainer::sum_over_processes
  void load_tp_slices(RankRuntime& rank, const TrainerState& s) const;
  void load_expert_states(RankRuntime& rank, const TrainerState& s) const;
  // tp, cp or pp > 1: global ranks 0..S-1 are not the shard owners of every unit (tp ranks hold slices,
  // pipeline ranks their stages' units).
  bool model_parallel() const {
    const Parallelism& par = rp.settings.parallelism;
    return par.tp > 1 || par.cp > 1 || par.pp > 1 || par.ep > 1;
  }
  // The shard owner whose state `r` holds: its shard index (DDP: owner 0 holds the only shard).
  int owner_of(const RankRuntime& r) const { return rp.shard_count > 1 ? r.shard_index() : 0; }
};

std::size_t Trainer::Impl::local_index(const RankRuntime& r) const {
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].get() == &r) return i;
  FSDP_CHECK(false, "Trainer: unknown rank runtime");
  return 0;
}

RankRuntime* Trainer::Impl::find_local(int rank) const {
  for (const auto& r : ranks)
    if (r->rank() == rank) return r.get();
  return nullptr;
}

int Trainer::Impl::owner_rank(std::size_t unit, int shard, int tp) const {
  return global_rank(rp, unit_role(rp, int(unit)), shard_owner_mesh_rank(rp, shard, tp));
}

void Trainer::Impl::on_ranks(const std::function<void(RankRuntime&)>& fn) {
  if (!failure.empty()) throw std::runtime_error("trainer stopped after an earlier error: " + failure);
  const auto body = [&](int i) {
    RankRuntime& rr = *ranks[std::size_t(i)];
    t_current_rank = rr.rank();
    cpu::set_kernel_pool(std::size_t(i) < pools.size() ? pools[std::size_t(i)].get() : nullptr);
    cpu::use_kernel_threads(budget.threads_per_rank);
    fn(rr);
  };
  const auto fail = [&](int i, const char* what) {  // named by the rank's place in the mesh
    RankRuntime& rr = *ranks[std::size_t(i)];
    std::string msg = fmt::format("rank {}: {}", rr.rank(), what);
    rr.abort(msg);
    return msg;
  };
  try {
    run_rank_threads(int(ranks.size()), body, fail);
  } catch (const std::exception& e) {  // the first failing rank's error, else the first abort
    failure = e.what();
    throw;
  }
}

std::vector<std::unique_ptr<RankBackend>> make_cpu_backends(const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
  std::vector<std::unique_ptr<RankBackend>> out;
  auto comms = make_thread_communicators(rp.settings.parallelism.world_size());
  for (std::size_t r = 0; r < comms.size(); ++r)
    out.push_back(std::make_unique<CpuRankBackend>(rp, std::move(comms[r]), r == 0 ? rank0_profiler : nullptr));
  return out;
}

Trainer::Trainer(const Plan& plan, std::shared_ptr<DataSource> data, TrainerOptions options,
                 const RankBackendFactory& make_backends)
    : Trainer(make_runtime_program(plan, options.cuda ? ExecutorDevice::cuda : ExecutorDevice::cpu), std::move(data),
              options, make_backends) {}

Trainer::Trainer(RuntimeProgram program, std::shared_ptr<DataSource> data, TrainerOptions options,
                 const RankBackendFactory& make_backends)
    : impl_(std::make_unique<Impl>()) {
  FSDP_CHECK(data != nullptr, "Trainer: data source is null");
  impl_->rp = std::move(program);
  const RuntimeProgram& rp = impl_->rp;
  impl_->data = std::move(data);
  impl_->options = options;
  if (!options.cuda) cpu::check_kernel_simd_support();
  auto backends = (make_backends ? make_backends : make_cpu_backends)(impl_->rp, options.profile ? &impl_->kernels : nullptr);
  FSDP_CHECK(!backends.empty(), "Trainer: no rank backends");
  std::vector<char> seen(std::size_t(rp.program.world_size), 0);
  for (auto& b : backends) {
    FSDP_CHECK(b->rank() >= 0 && b->rank() < int(seen.size()) && !seen[std::size_t(b->rank())]++,
               "Trainer: rank backends must have distinct ranks of the mesh");
    impl_->ranks.push_back(std::make_unique<RankRuntime>(impl_->rp, std::move(b), options));
  }
  // OpenBLAS is loaded here, before any rank or kernel thread runs: the load edits the environment
  // (cpu/blas_loader.h), which other threads must not read meanwhile.
  cpu::blas_gemms();
  impl_->budget = cpu::decide_thread_budget({options.threads, int(impl_->ranks.size()), options.processes_on_host});
  // CUDA ranks get a pool too: their host loops (the seeded initialisation, executor/model/init.cpp) use it.
  for (std::size_t i = 0; i < impl_->ranks.size(); ++i)
    impl_->pools.push_back(std::make_unique<cpu::KernelPool>(impl_->budget.threads_per_rank));
  const std::uint64_t seed = rp.settings.training.seed;
  const auto start = std::chrono::steady_clock::now();
  impl_->on_ranks([seed](RankRuntime& r) {
    r.connect();
    r.init_params(seed);
  });
  impl_->init_params_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Trainer::init_params_s() const { return impl_->init_params_s; }

Trainer::~Trainer() = default;

StepMetrics Trainer::step() {
  Impl& im = *impl_;
  const auto start = std::chrono::steady_clock::now();
  std::vector<RankStepResult> results(im.ranks.size());
  const std::int64_t step = im.step;
  const DataPosition pos = im.position;
  im.on_ranks([&](RankRuntime& r) { results[im.local_index(r)] = r.run_step(step, pos, *im.data, im.data_mu); });
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
  const TrainingSettings& t = im.rp.settings.training;
  StepMetrics m;
  m.step = ++im.step;
  im.position.next_sample += std::uint64_t(t.global_batch);
  m.loss = results[0].loss_sum / double(im.rp.grad_accum * im.rp.dp_ranks);  // summed in rank order
  m.grad_norm = results[0].grad_norm;
  m.lr = results[0].lr;
  m.skipped = results[0].skipped;
  m.loss_scale = results[0].loss_scale;
  m.time_s = dt.count();
  m.tokens_per_s = m.time_s > 0 ? double(t.global_batch * t.seq) / m.time_s : 0;
  if (im.options.profile) ++im.profiled_steps;
  return m;
}

TrainerState Trainer::Impl::header() const {
  TrainerState s;
  s.step = step;
  s.data = position;
  s.seed = rp.settings.training.seed;
  s.dp_shard = rp.shard_count;
  // Shards over dp_shard x cp (rp.shard_count), replicated over dp_replicate; DDP: every data-parallel rank.
  const Parallelism& par = rp.settings.parallelism;
  s.dp_replicate = rp.shard_count > 1 ? par.dp_replicate : par.data_parallel_ranks();
  s.loss_scaler = ranks[0]->loss_scaler();
  return s;
}

// Each element of a full unit is taken from one holder: the first, in (tp rank, shard) order or under
// expert parallelism in global rank order, whose state holds it (elements every tp rank holds whole are
// equal on all of them; the ep ranks' dense parts are alike). With ranks in other processes, each process
// writes the bit patterns of the elements its ranks hold first and the words are summed over the
// processes: one process adds a nonzero word per element, so the sum is exact.
TrainerState Trainer::Impl::model_parallel_state() {
  const Parallelism& par = rp.settings.parallelism;
  const bool all_here = int(ranks.size()) == par.world_size();
  TrainerState s = header();
  for (int r = 0; r < rp.shard_count; ++r)
    if (all_here || find_local(r)) s.ranks.emplace_back().rank = r;  // as without model parallelism
  for (std::size_t u = 0; u < rp.flats.size(); ++u) {
    const FlatUnitLayout& full = rp.full_flats[u];
    const auto n = std::size_t(full.padded_numel);
    std::vector<std::uint64_t> words(3 * n, 0);
    std::vector<char> taken(n, 0);
    for_each_holder(u, [&](int global, const std::vector<std::int64_t>& to_full) {
      RankRuntime* here = find_local(global);
      UnitShardState local;
      if (here) local = here->backend().unit_state(int(u));
      const auto from = fields(local);
      for (std::size_t i = 0; i < to_full.size(); ++i) {
        const std::int64_t e = to_full[i];
        if (e < 0 || taken[std::size_t(e)]) continue;
        taken[std::size_t(e)] = 1;
        if (here)
          for (std::size_t f = 0; f < 3; ++f) words[f * n + std::size_t(e)] = std::bit_cast<std::uint32_t>((*from[f])[i]);
      }
    });
    if (!all_here) words = sum_words(words);
    for (RankState& rs : s.ranks) {
      UnitShardState& shard = rs.units.emplace_back();
      shard.unit_numel = full.numel;
      shard.shard_offset = std::int64_t(rs.rank) * full.shard_numel;
      shard.modules = unit_modules(rp, u);
      const auto to = fields(shard);
      for (std::size_t f = 0; f < 3; ++f)
        for (std::int64_t i = 0; i < full.shard_numel; ++i)
          to[f]->push_back(std::bit_cast<float>(std::uint32_t(words[f * n + std::size_t(shard.shard_offset + i)])));
    }
  }
  return s;
}

// The holders of unit u with the element of the full unit each element of their state is (-1: padding).
void Trainer::Impl::for_each_holder(std::size_t u,
                                    const std::function<void(int, const std::vector<std::int64_t>&)>& fn) const {
  const Parallelism& par = rp.settings.parallelism;
  if (par.ep > 1) {  // the backend refuses replicas beside ep: every rank holds a part of the state
    for (int g = 0; g < par.world_size(); ++g) fn(g, expert_state_full_elements(rp, u, g));
    return;
  }
  const FlatUnitLayout& local = rp.flats[u];
  for (int t = 0; t < par.tp; ++t) {
    const std::vector<std::int64_t> to_full = unit_full_elements(rp, u, t);
    for (int r = 0; r < rp.shard_count; ++r) {
      std::vector<std::int64_t> shard(std::size_t(local.shard_numel), -1);
      for (std::int64_t i = 0; i < local.shard_numel; ++i) {
        const std::int64_t e = std::int64_t(r) * local.shard_numel + i;
        if (e < local.numel) shard[std::size_t(i)] = to_full[std::size_t(e)];
      }
      fn(owner_rank(u, r, t), shard);
    }
  }
}

TrainerState Trainer::local_state() const {
  Impl& im = *impl_;  // a collective under model parallelism with ranks in other processes
  if (im.model_parallel()) return im.model_parallel_state();
  TrainerState s = im.header();
  for (const auto& rank : im.ranks) {
    if (rank->rank() >= im.rp.shard_count) continue;  // the shard owners of replica 0: global ranks 0..S-1
    RankState rs;
    rs.rank = rank->rank();
    for (std::size_t u = 0; u < im.rp.flats.size(); ++u) {
      rs.units.push_back(rank->backend().unit_state(int(u)));
      rs.units.back().modules = unit_modules(im.rp, u);
    }
    s.ranks.push_back(std::move(rs));
  }
  std::sort(s.ranks.begin(), s.ranks.end(), [](const RankState& a, const RankState& b) { return a.rank < b.rank; });
  if (im.rp.settings.lora && !im.ranks.empty()) s.adapters = im.ranks.front()->backend().adapter_state();  // same on every rank
  return s;
}

TrainerState Trainer::state() const {
  TrainerState s = local_state();
  if (int(s.ranks.size()) != impl_->rp.shard_count)
    throw std::runtime_error("the sharded state of a multi-process run is not reachable from one process: use "
                             "local_state()");
  return s;
}

TrainerState Trainer::load_layout() const {
  const Impl& im = *impl_;
  TrainerState s = im.header();
  std::set<int> owners;
  for (const auto& rank : im.ranks) owners.insert(im.owner_of(*rank));
  for (int r = 0; im.model_parallel() && r < im.rp.shard_count; ++r) owners.insert(r);  // slices of every shard
  for (int owner : owners) {
    RankState rs;
    rs.rank = owner;
    for (std::size_t u = 0; u < im.rp.full_flats.size(); ++u) {
      const FlatUnitLayout& f = im.rp.full_flats[u];
      UnitShardState& us = rs.units.emplace_back();
      us.unit_numel = f.numel;
      us.shard_offset = std::int64_t(owner) * f.shard_numel;
      us.params.assign(std::size_t(f.shard_numel), 0.0f);
      us.exp_avg = us.exp_avg_sq = us.params;
      us.modules = unit_modules(im.rp, u);
    }
    s.ranks.push_back(std::move(rs));
  }
  return s;
}

void Trainer::Impl::check_state(const TrainerState& s) const {
  auto bad = [](const std::string& path, const std::string& what) {
    throw ConfigError(fmt::format("trainer state: {}: {}", path, what));
  };
  if (s.dp_shard != rp.shard_count)
    bad("/dp_shard", fmt::format("{} shards expected (got {}); reshard the state first", rp.shard_count, s.dp_shard));
  if (model_parallel() && int(s.ranks.size()) != rp.shard_count)
    bad("/ranks", fmt::format("tp = {}, cp = {} loads from all {} shards (got {})", rp.settings.parallelism.tp,
                              rp.settings.parallelism.cp, rp.shard_count, s.ranks.size()));
  for (std::size_t i = 0; i < s.ranks.size(); ++i) {
    const int r = s.ranks[i].rank;
    if (r < 0 || r >= rp.shard_count || (i > 0 && r <= s.ranks[i - 1].rank))
      bad(fmt::format("/ranks/{}/rank", i), fmt::format("shard owners 0..{} in increasing order expected, got {}",
                                                        rp.shard_count - 1, r));
    if (s.ranks[i].units.size() != rp.full_flats.size())
      bad(fmt::format("/ranks/{}/units", i), fmt::format("{} units expected", rp.full_flats.size()));
    for (std::size_t u = 0; u < rp.full_flats.size(); ++u) {
      const UnitShardState& us = s.ranks[i].units[u];
      const FlatUnitLayout& f = rp.full_flats[u];
      const auto n = std::size_t(f.shard_numel);
      if (us.unit_numel != f.numel || us.params.size() != n || us.exp_avg.size() != n ||
          us.exp_avg_sq.size() != n || us.shard_offset != std::int64_t(r) * f.shard_numel)
        bad(fmt::format("/ranks/{}/units/{}", i, u),
            fmt::format("a shard of {} elements at offset {} of a {}-element unit expected", n,
                        std::int64_t(r) * f.shard_numel, f.numel));
      if (!us.modules.empty() && us.modules != unit_modules(rp, u))
        bad(fmt::format("/ranks/{}/units/{}/modules", i, u), "another unit grouping; reshard the state first");
    }
  }
}

void Trainer::Impl::load_expert_states(RankRuntime& rank, const TrainerState& s) const {
  for (std::size_t u = 0; u < rp.flats.size(); ++u) {
    const std::vector<std::int64_t> to_full = expert_state_full_elements(rp, u, rank.rank());
    const std::int64_t full_shard = rp.full_flats[u].shard_numel;
    UnitShardState local = rank.backend().unit_state(int(u));
    const auto to = fields(local);
    for (std::size_t i = 0; i < to_full.size(); ++i) {
      const std::int64_t fe = to_full[i];
      if (fe < 0) {
        for (std::size_t f = 0; f < 3; ++f) (*to[f])[i] = 0.0f;
        continue;
      }
      const auto src = fields(s.ranks[std::size_t(fe / full_shard)].units[u]);
      for (std::size_t f = 0; f < 3; ++f) (*to[f])[i] = (*src[f])[std::size_t(fe % full_shard)];
    }
    rank.backend().load_unit_state(int(u), local);
  }
}

// tp rank t of a shard takes its slices from the full model's shards (check_state: all of them, in order).
void Trainer::Impl::load_tp_slices(RankRuntime& rank, const TrainerState& s) const {
  if (rp.settings.parallelism.ep > 1) return load_expert_states(rank, s);
  const int t = rank.model_parallel().tp_rank;
  for (std::size_t u = 0; u < rp.flats.size(); ++u) {
    if (!rank.backend().holds_unit(int(u))) continue;  // another pipeline rank's
    const std::vector<std::int64_t> to_full = unit_full_elements(rp, u, t);
    const std::int64_t full_shard = rp.full_flats[u].shard_numel;
    UnitShardState local = rank.backend().unit_state(int(u));
    const auto to = fields(local);
    for (std::size_t i = 0; i < local.params.size(); ++i) {
      const std::int64_t e = local.shard_offset + std::int64_t(i);
      const bool padding = e >= rp.flats[u].numel;
      const std::int64_t fe = padding ? 0 : to_full[std::size_t(e)];
      const auto src = fields(s.ranks[std::size_t(fe / full_shard)].units[u]);
      for (std::size_t f = 0; f < 3; ++f) (*to[f])[i] = padding ? 0.0f : (*src[f])[std::size_t(fe % full_shard)];
    }
    rank.backend().load_unit_state(int(u), local);
  }
}

void Trainer::load_state(const TrainerState& s) {
  Impl& im = *impl_;
  im.check_state(s);
  for (auto& rank : im.ranks) {
    if (im.model_parallel()) {
      im.load_tp_slices(*rank, s);
    } else {
      const int owner = im.owner_of(*rank);
      const auto it =
          std::find_if(s.ranks.begin(), s.ranks.end(), [&](const RankState& r) { return r.rank == owner; });
      if (it == s.ranks.end())
        throw ConfigError(fmt::format("trainer state: /ranks: no shard of owner {}, which rank {} loads from", owner,
                                      rank->rank()));
      for (std::size_t u = 0; u < im.rp.flats.size(); ++u) rank->backend().load_unit_state(int(u), it->units[u]);
    }
    if (!s.adapters.params.empty()) rank->backend().load_adapter_state(s.adapters);
    rank->backend().copy_masters_to_replicas();
    // A checkpoint of a run without loss scaling leaves the plan's initial scale.
    if (s.loss_scaler && rank->loss_scaler()) rank->set_loss_scaler(*s.loss_scaler);
  }
  im.step = s.step;
  im.position = s.data;
}

std::vector<std::uint64_t> Trainer::sum_over_processes(const std::vector<std::uint64_t>& words) {
  return impl_->sum_words(words);
}

// Four 16-bit limbs per word, exact in the fp32 host reductions of the CUDA backend; the first local rank
// contributes, the others add zeros. A piece of kMaxHostReduceCount / 4 words per call (one round trip
// between processes), its limbs built only for that piece: 8 MiB per local rank, whatever the unit's size.
std::vector<std::uint64_t> Trainer::Impl::sum_words(const std::vector<std::uint64_t>& words) {
  Impl& im = *this;
  constexpr std::size_t kWordsPerCall = kMaxHostReduceCount / 4;
  std::vector<std::uint64_t> sums(words.size(), 0);
  std::vector<std::vector<double>> limbs(im.ranks.size());
  for (std::size_t first = 0; first < words.size(); first += kWordsPerCall) {
    const std::size_t n = std::min(kWordsPerCall, words.size() - first);
    for (std::vector<double>& b : limbs) b.assign(4 * n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (int l = 0; l < 4; ++l) limbs[0][4 * i + std::size_t(l)] = double((words[first + i] >> (16 * l)) & 0xffff);
    im.on_ranks([&](RankRuntime& r) {
      std::vector<double>& b = limbs[im.local_index(r)];
      r.backend().all_reduce_host(b.data(), int(b.size()), MeshGroup::mesh_all);
    });
    for (std::size_t i = 0; i < n; ++i)
      for (int l = 0; l < 4; ++l)
        sums[first + i] += std::uint64_t(std::llround(limbs[0][4 * i + std::size_t(l)])) << (16 * l);
  }
  return sums;
}

bool Trainer::hosts_rank0() const {
  for (const auto& rank : impl_->ranks)
    if (rank->rank() == 0) return true;
  return false;
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
  p.collective_time_s = impl_->kernels.collective_time_s_;
  p.collective_calls = impl_->kernels.collective_calls_;
  p.steps = impl_->profiled_steps;
  return p;
}

std::vector<RankTimeline> Trainer::timelines() const {
  std::vector<RankTimeline> out;
  for (const auto& r : impl_->ranks) out.push_back(r->timeline());
  std::sort(out.begin(), out.end(), [](const RankTimeline& a, const RankTimeline& b) { return a.rank < b.rank; });
  return out;
}

std::vector<float> Trainer::gather_full_params() const {
  const RuntimeProgram& rp = impl_->rp;
  const TrainerState s = state();
  std::vector<float> full(std::size_t(rp.layout.total), 0.0f);
  for (std::size_t u = 0; u < rp.full_flats.size(); ++u) {
    const FlatUnitLayout& f = rp.full_flats[u];
    std::vector<float> unit;
    for (const RankState& r : s.ranks) unit.insert(unit.end(), r.units[u].params.begin(), r.units[u].params.end());
    for (std::size_t k = 0; k < f.modules.size(); ++k) {
      const ModuleLayout& m = rp.layout.modules[std::size_t(f.modules[k])];
      std::copy_n(unit.begin() + f.module_offsets[k], m.numel, full.begin() + m.offset);
    }
  }
  return full;
}

const RuntimeProgram& Trainer::program() const { return impl_->rp; }

const cpu::ThreadBudget& Trainer::thread_budget() const { return impl_->budget; }

int Trainer::current_rank() { return t_current_rank; }

}  // namespace fsdpx
