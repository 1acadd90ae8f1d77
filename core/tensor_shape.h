#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <vector>

namespace horde {

// A tensor's dimensions: a vector of int64 that holds up to kInlineDims of them in
// place, so that copying the shape of a tensor of ordinary rank (every request carries
// one) allocates nothing. Longer shapes live on the heap. Copyable and movable as a value.
class TensorShape {
 public:
  static constexpr size_t kInlineDims = 6;

  using value_type = int64_t;
  using size_type = size_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  TensorShape() = default;
  TensorShape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  template <typename InputIt, typename = typename std::iterator_traits<InputIt>::value_type>
  TensorShape(InputIt first, InputIt last) {
    assign(first, last);
  }

  template <typename InputIt>
  void assign(InputIt first, InputIt last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    if (n <= kInlineDims) {
      heap_.clear();
      std::copy(first, last, inline_);
    } else {
      heap_.assign(first, last);
    }
    size_ = n;
  }
  void resize(size_t n) {
    if (n > kInlineDims && !on_heap()) heap_.assign(inline_, inline_ + size_);
    if (n > kInlineDims) {
      heap_.resize(n);
    } else if (on_heap()) {
      std::copy(heap_.begin(), heap_.begin() + n, inline_);
      heap_.clear();
    } else {
      std::fill(inline_ + std::min(size_, n), inline_ + n, 0);
    }
    size_ = n;
  }
  void push_back(int64_t dim) {
    resize(size_ + 1);
    back() = dim;
  }
  iterator insert(const_iterator position, int64_t dim) {
    const size_t at = static_cast<size_t>(position - begin());
    push_back(dim);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  void clear() { resize(0); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return on_heap() ? heap_.data() : inline_; }
  const int64_t* data() const { return on_heap() ? heap_.data() : inline_; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& front() { return data()[0]; }
  int64_t front() const { return data()[0]; }
  int64_t& back() { return data()[size_ - 1]; }
  int64_t back() const { return data()[size_ - 1]; }

  friend bool operator==(const TensorShape& a, const TensorShape& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const TensorShape& a, const TensorShape& b) { return !(a == b); }

 private:
  bool on_heap() const { return size_ > kInlineDims; }

  int64_t inline_[kInlineDims] = {};
  std::vector<int64_t> heap_;  // all the dimensions, when there are more than kInlineDims
  size_t size_ = 0;
};

}  // namespace horde
