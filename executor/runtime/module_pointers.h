// executor/runtime/module_pointers.h — the per-module pointer tables the models take (forward_module
// reads params[m], backward_module adds to grads[m]), filled from a backend's FSDP units, whose flat
// buffers hold their modules at FlatUnitLayout::module_offsets. For any unit type with flat(),
// params_live() and module_params(k) (model/fsdp_unit.h's, the CPU FsdpUnit and the CUDA CudaUnit), held
// by value or by unique_ptr (null: a unit of another pipeline rank). Leaves out tensor-parallel shards of a module.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "executor/runtime/param_layout.h"

namespace fsdpx {

template <class Unit>
const Unit* unit_ptr(const Unit& u) { return &u; }
template <class Unit>
const Unit* unit_ptr(const std::unique_ptr<Unit>& u) { return u.get(); }

// Module m -> its parameters inside the unsharded buffer of its unit, null where the unit is sharded.
template <class Units>
auto live_module_params(const Units& units, int modules) {
  using Ptr = decltype(unit_ptr(units.front())->module_params(0));
  std::vector<Ptr> p(std::size_t(modules), nullptr);
  for (const auto& held : units) {
    const auto* u = unit_ptr(held);
    if (u == nullptr || !u->params_live()) continue;
    for (std::size_t k = 0; k < u->flat().modules.size(); ++k) p[std::size_t(u->flat().modules[k])] = u->module_params(int(k));
  }
  return p;
}

// Module m -> grads(k) for the modules k of one unit `flat`, null for every other module.
template <class Ptr, class Grads>
std::vector<Ptr> unit_module_grads(const FlatUnitLayout& flat, int modules, Grads grads) {
  std::vector<Ptr> g(std::size_t(modules), nullptr);
  for (std::size_t k = 0; k < flat.modules.size(); ++k) g[std::size_t(flat.modules[k])] = grads(int(k));
  return g;
}

}  // namespace fsdpx
