// executor/runtime/rank_units.h — the part of the rank skeleton that does not depend on the device: which
// FSDP units one rank holds and how it splits its groups, written once for every backend's unit and
// communicator types (CpuRankBackend's FsdpUnit and Communicator, CudaRankBackendT's CudaUnitT and
// DeviceCommunicator). A rank holds one unit per plan unit of its pipeline rank (null for the other
// stages') and, on the last stage of a pipeline with a tied head, a copy of the embedding's unit that
// rides along with the head's unit (Megatron-LM's embedding group: both copies step alike). Leaves out
// the units' buffers and collectives (the unit types) and the communicators' transports.
#pragma once

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/runtime/module_pointers.h"
#include "executor/runtime/runtime_program.h"
#include "program/group_members.h"

namespace fsdpx {

template <class Unit>
class RankUnits {
 public:
  RankUnits() = default;
  // make(plan unit) -> std::unique_ptr<Unit>: called for the units of pipeline rank `role`, and for
  // the tied table's source unit when `role` is the last stage and the program keeps a tied copy.
  template <class Make>
  RankUnits(const RuntimeProgram& rp, int role, Make make) {
    units_.resize(rp.flats.size());
    for (std::size_t u = 0; u < rp.flats.size(); ++u)
      if (unit_role(rp, int(u)) == role) units_[u] = make(int(u));
    const int source = tied_copy_source(rp);
    if (source < 0 || role != rp.program.pp - 1) return;
    copy_source_ = source;
    head_unit_ = rp.program.head_unit;
    tied_copy_ = make(source);
  }

  // The rank's units per plan unit (null: another pipeline rank's), for live_module_params.
  const std::vector<std::unique_ptr<Unit>>& per_plan_unit() const { return units_; }
  // The units whose state this rank loads: its own and the tied table's source (through the copy).
  bool holds(int unit) const { return units_[std::size_t(unit)] || unit == copy_source_; }
  bool owns(int unit) const { return units_[std::size_t(unit)] != nullptr; }
  Unit& own(int unit) const {
    FSDP_CHECK(owns(unit), fmt::format("rank backend: unit {} is on another pipeline rank", unit));
    return *units_[std::size_t(unit)];
  }
  // The copy of a tied table, which every op on the head's unit also runs on (null: none here).
  Unit* copy_with(int unit) const { return unit == head_unit_ ? tied_copy_.get() : nullptr; }
  Unit* tied_copy() const { return tied_copy_.get(); }
  int copy_source() const { return copy_source_; }
  int head_unit() const { return head_unit_; }
  // What an op on `unit` runs on: the unit, then the tied copy riding along with it.
  std::vector<Unit*> with_copy(int unit) const {
    std::vector<Unit*> out{&own(unit)};
    if (Unit* copy = copy_with(unit)) out.push_back(copy);
    return out;
  }
  // The unit whose state `unit` reads: the copy where the rank holds only the copy of a tied table.
  const Unit& state_of(int unit) const { return owns(unit) ? own(unit) : *tied_copy_; }
  // Every unit held with the plan unit whose values it holds (the copy: its source), copy last.
  std::vector<std::pair<int, Unit*>> indexed() const {
    std::vector<std::pair<int, Unit*>> out;
    for (std::size_t u = 0; u < units_.size(); ++u)
      if (units_[u]) out.emplace_back(int(u), units_[u].get());
    if (tied_copy_) out.emplace_back(copy_source_, tied_copy_.get());
    return out;
  }
  // The unit whose accumulated gradient shard the tied all-reduce sums on pipeline rank `role`: the
  // embedding's own on the first stage, its copy on the last (laid out alike, element for element).
  Unit& tied_grads(const RuntimeProgram& rp, int role, int unit) const {
    FSDP_CHECK(role == 0 ? unit == tied_copy_source(rp) : copy_with(unit) != nullptr,
               "rank backend: a tied all-reduce outside the first and last stage's tied units");
    return role == 0 ? own(unit) : *tied_copy_;
  }
  std::vector<Unit*> all() const {
    std::vector<Unit*> out;
    for (const auto& [u, unit] : indexed()) out.push_back(unit);
    return out;
  }
  void clear() { units_.clear(), tied_copy_.reset(); }

  // Module m -> its parameters where its unit is unsharded, else null; the last stage's tied head reads
  // the token table (module 0) from its copy.
  auto live_params(int modules) const {
    auto p = live_module_params(units_, modules);
    if (tied_copy_ && tied_copy_->params_live()) p[0] = tied_copy_->module_params(0);
    return p;
  }
  // Module m -> grad(u, k), the gradient of module k of unit u, for the modules of `unit` (the tied
  // copy's table as module 0), null for every other module, and all null for a frozen unit (LoRA's base).
  template <class Grad>
  auto unit_grads(const RuntimeProgram& rp, int unit, Grad grad) const {
    using Ptr = decltype(grad(own(unit), 0));
    const int modules = rp.layout.num_modules();
    if (rp.program.units[std::size_t(unit)].frozen) return std::vector<Ptr>(std::size_t(modules), nullptr);
    Unit& u = own(unit);
    std::vector<Ptr> g = unit_module_grads<Ptr>(u.flat(), modules, [&](int k) { return grad(u, k); });
    if (Unit* copy = copy_with(unit)) g[0] = grad(*copy, 0);
    return g;
  }

 private:
  std::vector<std::unique_ptr<Unit>> units_;
  std::unique_ptr<Unit> tied_copy_;
  int copy_source_ = -1, head_unit_ = -1;  // the embedding's and the head's unit when tied_copy_ is set
};

// The (color, key) of the split of a group inside a pipeline rank's mesh, the same on every backend so
// that every rank splits the same groups: colored by the pipeline rank and the group's lowest mesh rank,
// its members ordered as program/group_members lists them.
inline std::pair<int, int> mesh_group_split(const Mesh& mesh, const ProcessGroup& group, int role, int mesh_rank) {
  std::vector<int> members;
  group_members(mesh, group, mesh_rank, members);
  const auto at = std::find(members.begin(), members.end(), mesh_rank) - members.begin();
  return {role * mesh.size() + members.front(), int(at)};
}

// The unit's reshard group (FSDP2's post-forward mesh of g ranks) among a backend's reshard
// communicators, one per group size g.
template <class Comm>
Comm& reshard_communicator(const std::vector<std::pair<int, std::unique_ptr<Comm>>>& comms, int g) {
  for (const auto& [ranks, comm] : comms)
    if (ranks == g) return *comm;
  FSDP_CHECK(false, fmt::format("rank backend: no reshard group of {} ranks", g));
  return *comms.front().second;
}

}  // namespace fsdpx
