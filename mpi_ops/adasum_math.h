#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "horde/data_type.h"

namespace horde {
namespace adasum {

// The arithmetic of Adasum (Maleki et al., "Adaptive Summation", MLSys 2021) as Horovod
// computes it, free of MPI so that it is unit-tested alone; mpi_adasum_allreduce.cc
// moves the data. Two vectors a and b combine into
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b,
// which is a + b for orthogonal vectors and a for b == a. Dot products and the
// combination are computed in float64 whatever the element type (float16, bfloat16,
// float32, float64), so squares of values near a type's limit stay finite.

// Sums over (a piece of) one tensor. `left` is the vector of the ranks whose bit of the
// current level is 0, `right` that of their partners; every rank of a level's group files
// its sums the same way, so adding the group's sums gives the whole tensors' products.
struct Dots {
  double dot = 0;
  double left_norm2 = 0;
  double right_norm2 = 0;
};

struct Coefficients {
  double left = 1;
  double right = 1;
};

// Below this squared norm a vector counts as zero and keeps coefficient 1 (Horovod's
// guard): a rank that contributes zeros (a joined rank) leaves the other vector as is.
// It is about the square root of the smallest normal double, as Horovod's: any larger
// bound treats real vectors of small values as zero (float16 values near its smallest
// normal, 6.1e-5, have squared norms near 4e-9), and parallel ones then add up instead of
// averaging.
constexpr double kZeroNorm2 = 1.4916681462400413e-154;  // sqrt(2.2250738585072014e-308)

Coefficients CoefficientsOf(const Dots& dots);

// Adds the products of `count` elements of `left` and `right` (of `dtype`) to *dots.
void AccumulateDots(DataType dtype, const void* left, const void* right, int64_t count, Dots* dots);

// mine[i] = mine_coeff * mine[i] + their_coeff * theirs[i], in float64, stored as dtype.
void Combine(DataType dtype, void* mine, const void* theirs, int64_t count, double mine_coeff,
             double their_coeff);

// Elements [begin, end) of a flat buffer.
struct Window {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t count() const { return end - begin; }
};

// The half of `window` a rank keeps at one level: the first floor(count/2) elements for
// the lower rank of the pair (`upper` false), the rest for the upper one. Both ranks of a
// pair hold the same window, so they split it the same way.
Window KeptHalf(const Window& window, bool upper);
// The half its partner keeps.
Window GivenHalf(const Window& window, bool upper);

// Tensors laid out back to back in a flat buffer, by element counts: which part of each
// a window covers. Dot products are per tensor, even when several share the buffer.
class TensorLayout {
 public:
  explicit TensorLayout(const std::vector<int64_t>& counts);

  size_t size() const { return starts_.size(); }
  int64_t total() const { return total_; }
  // The part of tensor `i` inside `window` (empty: begin == end).
  Window Overlap(size_t i, const Window& window) const;

 private:
  std::vector<int64_t> starts_;
  std::vector<int64_t> ends_;
  int64_t total_ = 0;
};

// For every tensor of `layout`, the Dots of its part in `window`: `mine` holds buffer
// elements [window.begin, window.end), `theirs` the partner's same elements; `upper` says
// whether mine is the right vector. `dots` gets one entry per tensor (zeros for tensors
// outside the window), so every rank of a group sums vectors of the same length.
void WindowDots(DataType dtype, const TensorLayout& layout, const Window& window, const char* mine,
                const char* theirs, bool upper, std::vector<Dots>* dots);

// Combines mine with theirs over `window`, each tensor with the coefficients of its
// group-wide `dots`.
void CombineWindow(DataType dtype, const TensorLayout& layout, const Window& window, char* mine,
                   const char* theirs, bool upper, const std::vector<Dots>& dots);

}  // namespace adasum
}  // namespace horde
