// program/small_vec.h — a vector that keeps its first N elements inside the object: an op's dependencies
// and memory effects (step_program.h) are one to three entries, and a heap block each was the lowering's
// most frequent allocation (docs/performance.md, names11). The std::vector subset their readers use:
// push_back, size, empty, [], front, back, begin/end (pointers), data, clear, reserve, copy and move,
// assignment from a braced list or a std::vector, ==. Trivially copyable element types only (ints,
// MemEffect): no destructors to run, copies are memcpy. Leaves out insert, erase, resize and allocators.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <vector>

namespace fsdpx {

template <typename T, std::size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "SmallVec holds trivially copyable elements only");
  static_assert(N >= 1 && N < 0x10000, "SmallVec: 1 to 65,535 inline elements");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVec() noexcept {}  // the inline slots stay unconstructed until pushed
  SmallVec(std::initializer_list<T> items) { append(items.begin(), items.size()); }
  SmallVec(const SmallVec& other) { append(other.data(), other.size()); }
  SmallVec(SmallVec&& other) noexcept { take(other); }
  ~SmallVec() { release(); }

  SmallVec& operator=(const SmallVec& other) {
    if (this != &other) assign(other.data(), other.size());
    return *this;
  }
  SmallVec& operator=(SmallVec&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  SmallVec& operator=(std::initializer_list<T> items) {
    assign(items.begin(), items.size());
    return *this;
  }
  SmallVec& operator=(const std::vector<T>& items) {
    assign(items.data(), items.size());
    return *this;
  }

  void push_back(const T& value) {
    const T copy = value;  // `value` may live in the block that grow() frees
    if (size_ == capacity_) grow(std::size_t(capacity_) * 2);
    std::construct_at(data() + size_, copy);
    ++size_;
  }
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }
  void clear() noexcept { size_ = 0; }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return capacity_; }
  T* data() noexcept { return heap_ ? heap_ : inline_; }
  const T* data() const noexcept { return heap_ ? heap_ : inline_; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }

  friend bool operator==(const SmallVec& a, const SmallVec& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend bool operator==(const SmallVec& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void assign(const T* items, std::size_t n) {
    size_ = 0;
    append(items, n);
  }
  void append(const T* items, std::size_t n) {
    reserve(std::size_t(size_) + n);
    std::uninitialized_copy_n(items, n, data() + size_);
    size_ += std::uint32_t(n);
  }
  // Moves the elements to a heap block of `n` slots (n > size).
  void grow(std::size_t n) {
    T* block = std::allocator<T>().allocate(n);
    std::uninitialized_copy_n(data(), size_, block);
    release();
    heap_ = block;
    capacity_ = std::uint32_t(n);
  }
  void release() noexcept {
    if (heap_) std::allocator<T>().deallocate(heap_, capacity_);
    heap_ = nullptr;
    capacity_ = N;
  }
  // Takes `other`'s elements (its heap block, or a copy of its inline ones) and leaves it empty.
  void take(SmallVec& other) noexcept {
    if (other.heap_) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      other.heap_ = nullptr;
      other.capacity_ = N;
    } else {
      std::uninitialized_copy_n(other.inline_, other.size_, inline_);
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  T* heap_ = nullptr;  // the elements when more than N were held; else inline_
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = N;
  union {
    T inline_[N];
  };
};

}  // namespace fsdpx
