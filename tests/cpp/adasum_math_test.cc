// The arithmetic of Adasum (mpi_ops/adasum_math.h), without MPI: the pairwise
// combination, its zero guard, float64 internals near each type's limit, and per-tensor
// dot products over a fused buffer that is halved across tensor boundaries.
#include "mpi_ops/adasum_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "mpi_ops/half_float.h"

namespace horde {
namespace adasum {
namespace {

// Values of one dtype in raw memory, built from and read back as doubles.
struct Buffer {
  DataType dtype;
  std::vector<char> bytes;

  Buffer(DataType type, const std::vector<double>& values)
      : dtype(type), bytes(values.size() * DataTypeSize(type)) {
    for (size_t i = 0; i < values.size(); ++i) Set(i, values[i]);
  }
  size_t size() const { return bytes.size() / DataTypeSize(dtype); }
  char* data() { return bytes.data(); }

  void Set(size_t i, double v) {
    switch (dtype) {
      case DataType::kFloat16:
        reinterpret_cast<uint16_t*>(data())[i] = FloatToFloat16(float(v));
        break;
      case DataType::kBFloat16:
        reinterpret_cast<uint16_t*>(data())[i] = FloatToBFloat16(float(v));
        break;
      case DataType::kFloat32: reinterpret_cast<float*>(data())[i] = float(v); break;
      default: reinterpret_cast<double*>(data())[i] = v; break;
    }
  }
  double Get(size_t i) const {
    switch (dtype) {
      case DataType::kFloat16:
        return Float16ToFloat(reinterpret_cast<const uint16_t*>(bytes.data())[i]);
      case DataType::kBFloat16:
        return BFloat16ToFloat(reinterpret_cast<const uint16_t*>(bytes.data())[i]);
      case DataType::kFloat32: return reinterpret_cast<const float*>(bytes.data())[i];
      default: return reinterpret_cast<const double*>(bytes.data())[i];
    }
  }
  std::vector<double> Values() const {
    std::vector<double> out;
    for (size_t i = 0; i < size(); ++i) out.push_back(Get(i));
    return out;
  }
};

// The combination of two whole vectors, as one rank pair computes it: a is the left
// vector (and the result), b the right.
std::vector<double> Adasum(DataType dtype, const std::vector<double>& a,
                           const std::vector<double>& b) {
  Buffer left(dtype, a), right(dtype, b);
  Dots dots;
  AccumulateDots(dtype, left.data(), right.data(), left.size(), &dots);
  const Coefficients c = CoefficientsOf(dots);
  Combine(dtype, left.data(), right.data(), left.size(), c.left, c.right);
  return left.Values();
}

const DataType kFloatTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                DataType::kFloat64};

TEST(AdasumMath, OrthogonalVectorsAdd) {
  for (DataType dtype : kFloatTypes) {
    EXPECT_EQ(Adasum(dtype, {1, 0, 0, 2}, {0, 3, 0, 0}), (std::vector<double>{1, 3, 0, 2}))
        << DataTypeName(dtype);
  }
}

TEST(AdasumMath, IdenticalVectorsGiveThemselves) {
  for (DataType dtype : kFloatTypes) {
    EXPECT_EQ(Adasum(dtype, {1, -2, 0.5}, {1, -2, 0.5}), (std::vector<double>{1, -2, 0.5}))
        << DataTypeName(dtype);
  }
}

TEST(AdasumMath, ParallelVectorsAverage) {
  // a and 2a: coefficients 1 - 2/2 = 0 and 1 - 2/8 = 3/4, so 3/4 * 2a = 1.5a.
  EXPECT_EQ(Adasum(DataType::kFloat64, {2, 4}, {4, 8}), (std::vector<double>{3, 6}));
}

TEST(AdasumMath, GeneralCaseMatchesTheFormula) {
  const std::vector<double> a{1, 2, 3}, b{-1, 0.5, 2};
  const double ab = -1 + 1 + 6, aa = 14, bb = 5.25;
  const std::vector<double> got = Adasum(DataType::kFloat64, a, b);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_DOUBLE_EQ(got[i], (1 - ab / (2 * aa)) * a[i] + (1 - ab / (2 * bb)) * b[i]);
  }
}

TEST(AdasumMath, ZeroVectorLeavesTheOther) {
  for (DataType dtype : kFloatTypes) {
    EXPECT_EQ(Adasum(dtype, {0, 0, 0}, {3, -4, 1}), (std::vector<double>{3, -4, 1}))
        << DataTypeName(dtype);
    EXPECT_EQ(Adasum(dtype, {3, -4, 1}, {0, 0, 0}), (std::vector<double>{3, -4, 1}))
        << DataTypeName(dtype);
  }
  EXPECT_EQ(Adasum(DataType::kFloat32, {0, 0}, {0, 0}), (std::vector<double>{0, 0}));
}

TEST(AdasumMath, NormsBelowTheGuardKeepCoefficientOne) {
  // As in Horovod: a squared norm under about sqrt(smallest normal double) counts as
  // zero, whatever the other vector.
  Dots tiny{1e-160, 1e-160, 1e-160};
  Coefficients c = CoefficientsOf(tiny);
  EXPECT_EQ(c.left, 1.0);
  EXPECT_EQ(c.right, 1.0);
  Dots one_side{0.5, 1.0, 1e-160};
  c = CoefficientsOf(one_side);
  EXPECT_DOUBLE_EQ(c.left, 0.75);
  EXPECT_EQ(c.right, 1.0);
}

TEST(AdasumMath, TinyParallelVectorsAverageInsteadOfAdding) {
  // float16's smallest normal: squared norms near 4e-9, real vectors, not zeros.
  Dots parallel{3.7e-9, 3.7e-9, 3.7e-9};
  Coefficients c = CoefficientsOf(parallel);
  EXPECT_DOUBLE_EQ(c.left, 0.5);
  EXPECT_DOUBLE_EQ(c.right, 0.5);
}

TEST(AdasumMath, ValuesNearTheTypeLimitStayFinite) {
  // Squares of these overflow the type itself; in float64 they do not.
  struct Case {
    DataType dtype;
    double value;
  };
  for (Case c : {Case{DataType::kFloat16, 60000}, Case{DataType::kBFloat16, 3e38},
                 Case{DataType::kFloat32, 3e38}, Case{DataType::kFloat64, 1e150}}) {
    const std::vector<double> v(16, c.value);
    const std::vector<double> got = Adasum(c.dtype, v, v);
    const double stored = Buffer(c.dtype, {c.value}).Get(0);
    for (double x : got) {
      EXPECT_TRUE(std::isfinite(x)) << DataTypeName(c.dtype);
      EXPECT_EQ(x, stored) << DataTypeName(c.dtype);
    }
    // Orthogonal halves near the limit add without overflowing either.
    std::vector<double> left(16, 0), right(16, 0);
    for (int i = 0; i < 8; ++i) left[i] = right[8 + i] = c.value;
    for (double x : Adasum(c.dtype, left, right)) EXPECT_EQ(x, stored) << DataTypeName(c.dtype);
  }
}

TEST(AdasumMath, HalvesSplitOddWindowsTheSameWayOnBothRanks) {
  const Window w{3, 8};
  EXPECT_EQ(KeptHalf(w, false).begin, 3);
  EXPECT_EQ(KeptHalf(w, false).end, 5);
  EXPECT_EQ(KeptHalf(w, true).begin, 5);
  EXPECT_EQ(KeptHalf(w, true).end, 8);
  EXPECT_EQ(GivenHalf(w, false).begin, KeptHalf(w, true).begin);
  EXPECT_EQ(GivenHalf(w, true).end, KeptHalf(w, false).end);
  const Window one{4, 5};
  EXPECT_EQ(KeptHalf(one, false).count(), 0);
  EXPECT_EQ(KeptHalf(one, true).count(), 1);
}

TEST(AdasumMath, LayoutOverlapsClipTensorsToTheWindow) {
  const TensorLayout layout({3, 0, 4, 1});
  EXPECT_EQ(layout.total(), 8);
  const Window w{2, 6};
  EXPECT_EQ(layout.Overlap(0, w).begin, 2);
  EXPECT_EQ(layout.Overlap(0, w).end, 3);
  EXPECT_EQ(layout.Overlap(1, w).count(), 0);
  EXPECT_EQ(layout.Overlap(2, w).begin, 3);
  EXPECT_EQ(layout.Overlap(2, w).end, 6);
  EXPECT_EQ(layout.Overlap(3, w).count(), 0);
}

TEST(AdasumMath, FusedTensorsCombineWithTheirOwnCoefficients) {
  // Two tensors back to back: the first identical on both sides (result: itself), the
  // second orthogonal (result: the sum). One window over both, as a fused buffer.
  const TensorLayout layout({2, 3});
  Buffer left(DataType::kFloat32, {1, 2, /**/ 1, 0, 0});
  Buffer right(DataType::kFloat32, {1, 2, /**/ 0, 5, 0});
  const Window all{0, 5};
  for (bool upper : {false, true}) {
    Buffer mine = upper ? right : left;
    const Buffer& theirs = upper ? left : right;
    std::vector<Dots> dots;
    WindowDots(DataType::kFloat32, layout, all, mine.data(), theirs.bytes.data(), upper, &dots);
    ASSERT_EQ(dots.size(), 2u);
    EXPECT_EQ(dots[0].dot, 5);
    EXPECT_EQ(dots[1].dot, 0);
    EXPECT_EQ(dots[1].left_norm2, 1);
    EXPECT_EQ(dots[1].right_norm2, 25);
    CombineWindow(DataType::kFloat32, layout, all, mine.data(), theirs.bytes.data(), upper, dots);
    EXPECT_EQ(mine.Values(), (std::vector<double>{1, 2, 1, 5, 0})) << "upper " << upper;
  }
}

TEST(AdasumMath, DotsOfPiecesAddUpToTheWholeTensor) {
  // Two ranks each hold a piece of the window; their sums add to the whole products,
  // and each files the left vector's norm in the same slot.
  const TensorLayout layout({5});
  Buffer a(DataType::kFloat64, {1, 2, 3, 4, 5}), b(DataType::kFloat64, {5, 4, 3, 2, 1});
  const Window lower_piece = KeptHalf({0, 5}, false), upper_piece = KeptHalf({0, 5}, true);
  std::vector<Dots> lower, upper;
  // The lower rank holds a's piece and received b's; the upper one the reverse.
  WindowDots(DataType::kFloat64, layout, lower_piece, a.data(), b.data(), false, &lower);
  WindowDots(DataType::kFloat64, layout, upper_piece, b.data() + 2 * sizeof(double),
             a.data() + 2 * sizeof(double), true, &upper);
  EXPECT_EQ(lower[0].dot + upper[0].dot, 35);
  EXPECT_EQ(lower[0].left_norm2 + upper[0].left_norm2, 55);
  EXPECT_EQ(lower[0].right_norm2 + upper[0].right_norm2, 55);
}

}  // namespace
}  // namespace adasum
}  // namespace horde
