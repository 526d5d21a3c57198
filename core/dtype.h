// core/dtype.h — numeric formats used for parameters, gradients, reductions and compute, with their
// sizes in bytes. Leaves out block-scaled formats (mxfp8) and per-tensor scaling metadata.
#pragma once

#include <string>
#include <string_view>

namespace fsdpx {

enum class DType { fp32, tf32, bf16, fp16, fp8 };

// Storage bytes per element (tf32 is stored as fp32).
constexpr double dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::tf32: return 4;
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp8: return 1;
  }
  return 4;
}

std::string_view dtype_name(DType t);
// Strict: returns false for an unknown name (the caller reports it with its path).
bool parse_dtype(std::string_view name, DType& out);

}  // namespace fsdpx
