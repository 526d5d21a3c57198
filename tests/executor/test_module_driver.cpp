// tests/executor/test_module_driver.cpp — the model driver's device-neutral half
// (executor/model/module_driver.h): the module split, the recompute choice per block and the
// per-module pointer lookups both models read their tensors through.
#include <doctest/doctest.h>

#include <vector>

#include "executor/model/module_driver.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

TEST_CASE("module driver: module parts, recompute per block, tensor lookups") {
  const ModelSpec spec = test::tiny_llama();
  const std::vector<RecomputeMode> rc(std::size_t(spec.layers), RecomputeMode::none);
  std::vector<RecomputeMode> mixed = rc;
  mixed.back() = RecomputeMode::full;
  mixed.front() = RecomputeMode::selective;  // treated as none by both backends
  ModuleDriver<float, double> d("test", make_param_layout(spec), mixed);
  const ParamLayout& l = d.layout();
  CHECK(d.num_modules() == spec.layers + 3);
  CHECK(d.part(0) == ModulePart::embedding);
  CHECK(d.part(1) == ModulePart::block);
  CHECK(d.part(int(spec.layers)) == ModulePart::block);
  CHECK(d.part(l.final_norm_index()) == ModulePart::final_norm);
  CHECK(d.part(l.head_index()) == ModulePart::head);
  CHECK_FALSE(d.recomputes(0));
  CHECK(d.recomputes(spec.layers - 1));
  CHECK_FALSE(ModuleDriver<float, float>("test", make_param_layout(spec), {}).recomputes(0));

  std::vector<float> params(std::size_t(l.total));
  std::vector<double> grads(std::size_t(l.total));
  std::vector<const float*> p;
  std::vector<double*> g;
  for (const ModuleLayout& m : l.modules) p.push_back(params.data() + m.offset), g.push_back(grads.data() + m.offset);
  const int fn = l.final_norm_index();
  const TensorSlot* w = l.modules[std::size_t(fn)].find("final_norm.weight");
  REQUIRE(w != nullptr);
  CHECK(d.tensor(std::span<const float* const>(p), fn, "final_norm.weight") == p[std::size_t(fn)] + w->offset);
  CHECK(d.tensor(std::span<double* const>(g), fn, "final_norm.weight") == g[std::size_t(fn)] + w->offset);
  CHECK(d.tensor(std::span<const float* const>(p), fn, "no.such.tensor") == nullptr);
  CHECK(d.module_base(std::span<const float* const>(p), 1) == params.data() + l.modules[1].offset);
}

}  // namespace
}  // namespace fsdpx
