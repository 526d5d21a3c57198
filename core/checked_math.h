// core/checked_math.h — overflow-checked products and sums of 64-bit counts (parameters, elements,
// bytes, ranks). try_* report an overflow to the caller, who turns it into an input error; checked_*
// are for values whose ranges (core/input_ranges.h) rule overflow out, so an overflow there is a
// broken invariant (FSDP_CHECK). Leaves out saturating arithmetic: a wrapped count is never useful.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

#include "core/errors.h"

namespace fsdpx {

inline std::optional<std::int64_t> try_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of all factors, or nullopt when it (or any partial product) leaves int64.
inline std::optional<std::int64_t> try_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t r = 1;
  for (std::int64_t f : factors)
    if (__builtin_mul_overflow(r, f, &r)) return std::nullopt;
  return r;
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  FSDP_CHECK(!__builtin_mul_overflow(a, b, &r), "64-bit overflow in a count: an input escaped its range check");
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  FSDP_CHECK(!__builtin_add_overflow(a, b, &r), "64-bit overflow in a count: an input escaped its range check");
  return r;
}

}  // namespace fsdpx
