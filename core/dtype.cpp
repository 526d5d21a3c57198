// core/dtype.cpp — names of numeric formats.
#include "core/dtype.h"

#include <array>
#include <utility>

namespace fsdpx {

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 5> kNames{{
    {DType::fp32, "fp32"}, {DType::tf32, "tf32"}, {DType::bf16, "bf16"}, {DType::fp16, "fp16"}, {DType::fp8, "fp8"}}};
}

std::string_view dtype_name(DType t) {
  for (const auto& [d, n] : kNames)
    if (d == t) return n;
  return "fp32";
}

bool parse_dtype(std::string_view name, DType& out) {
  for (const auto& [d, n] : kNames)
    if (n == name) {
      out = d;
      return true;
    }
  return false;
}

}  // namespace fsdpx
