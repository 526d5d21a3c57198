// tests/program/test_small_vec.cpp — program/small_vec.h against std::vector: the same elements after
// pushes within and past the inline slots, copies and moves of inline and heap-held contents (the source
// of a move left empty), assignment from a braced list and a std::vector, self-assignment, a push of an
// element of its own while growing, clear and reuse, and ==.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "program/small_vec.h"
#include "program/step_program.h"

namespace fsdpx {
namespace {

using Vec = SmallVec<int, 4>;

std::vector<int> as_vector(const Vec& v) { return std::vector<int>(v.begin(), v.end()); }

Vec filled(int n) {
  Vec v;
  for (int i = 0; i < n; ++i) v.push_back(10 * i + 1);
  return v;
}

std::vector<int> expected(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(10 * i + 1);
  return v;
}

TEST_CASE("SmallVec: pushes within and past the inline slots keep every element in order") {
  for (int n : {0, 1, 3, 4, 5, 8, 9, 100}) {
    INFO("n = " << n);
    const Vec v = filled(n);
    CHECK(v.size() == std::size_t(n));
    CHECK(v.empty() == (n == 0));
    CHECK(as_vector(v) == expected(n));
    CHECK(v.capacity() >= v.size());
    if (n <= 4) CHECK(v.capacity() == 4);  // no heap block within the inline slots
    if (n > 0) {
      CHECK(v.front() == 1);
      CHECK(v.back() == 10 * (n - 1) + 1);
      CHECK(v[std::size_t(n / 2)] == 10 * (n / 2) + 1);
    }
  }
}

TEST_CASE("SmallVec: copies and moves of inline and heap contents") {
  for (int n : {0, 2, 4, 7}) {
    INFO("n = " << n);
    Vec a = filled(n);
    Vec copy(a);
    CHECK(copy == a);
    CHECK((n == 0 || copy.data() != a.data()));
    Vec assigned = filled(9);
    assigned = a;
    CHECK(as_vector(assigned) == expected(n));
    Vec moved(std::move(a));
    CHECK(as_vector(moved) == expected(n));
    CHECK(a.empty());  // NOLINT(bugprone-use-after-move): a moved-from SmallVec is empty
    a.push_back(5);    // and usable
    CHECK(as_vector(a) == std::vector<int>{5});
    Vec target = filled(6);
    target = std::move(moved);
    CHECK(as_vector(target) == expected(n));
    copy = copy;  // self-assignment keeps the contents
    CHECK(as_vector(copy) == expected(n));
  }
}

TEST_CASE("SmallVec: assignment from a braced list and a std::vector, clear, ==") {
  Vec v = filled(7);
  v = {3, 1, 2};
  CHECK(v == std::vector<int>{3, 1, 2});
  v = std::vector<int>{9, 8, 7, 6, 5, 4};
  CHECK(as_vector(v) == std::vector<int>{9, 8, 7, 6, 5, 4});
  CHECK_FALSE(v == std::vector<int>{9, 8, 7});
  v.clear();
  CHECK(v.empty());
  v.push_back(42);
  CHECK(v == Vec{42});
  CHECK_FALSE(v == Vec{42, 1});
}

TEST_CASE("SmallVec: pushing its own element while it grows") {
  Vec v = filled(4);
  v.push_back(v[0]);  // the inline slots move to a heap block first
  CHECK(as_vector(v) == std::vector<int>{1, 11, 21, 31, 1});
  for (int i = 0; i < 3; ++i) v.push_back(v[4]);  // and again at the next growth (8 -> 16)
  v.push_back(v.back());
  CHECK(v.size() == 9);
  CHECK(v.back() == 1);
  v.reserve(64);
  CHECK(v.capacity() >= 64);
  CHECK(v[3] == 31);
}

TEST_CASE("SmallVec: memory effects, as an op holds them") {
  Op op;
  op.alloc_at_start.push_back({MemCategory::activations, 30});
  op.alloc_at_start.push_back({MemCategory::transient, 5});
  op.alloc_at_start.push_back({MemCategory::grads, 20});  // past the two inline slots
  const Op copy = op;
  REQUIRE(copy.alloc_at_start.size() == 3);
  CHECK(copy.alloc_at_start[2].category == MemCategory::grads);
  CHECK(copy.alloc_at_start[2].bytes == 20);
  double bytes = 0;
  for (const MemEffect& e : copy.alloc_at_start) bytes += e.bytes;
  CHECK(bytes == 55);
  const MemEffects taken = std::exchange(op.alloc_at_start, {});
  CHECK(taken.size() == 3);
  CHECK(op.alloc_at_start.empty());
}

}  // namespace
}  // namespace fsdpx
