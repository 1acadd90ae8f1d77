#include "mpi_ops/adasum_math.h"

#include <algorithm>

#include "mpi_ops/half_float.h"

namespace horde {
namespace adasum {
namespace {

// Element access in float64. 16-bit floats convert through float32, which holds every
// value of theirs exactly; results round back once, when stored.
struct Float16 {
  using Raw = uint16_t;
  static double Load(Raw x) { return Float16ToFloat(x); }
  static Raw Store(double x) { return FloatToFloat16(static_cast<float>(x)); }
};
struct BFloat16 {
  using Raw = uint16_t;
  static double Load(Raw x) { return BFloat16ToFloat(x); }
  static Raw Store(double x) { return FloatToBFloat16(static_cast<float>(x)); }
};
template <typename T>
struct Native {
  using Raw = T;
  static double Load(Raw x) { return x; }
  static Raw Store(double x) { return static_cast<Raw>(x); }
};

template <typename Codec>
void DotsOf(const void* left, const void* right, int64_t count, Dots* dots) {
  const auto* a = static_cast<const typename Codec::Raw*>(left);
  const auto* b = static_cast<const typename Codec::Raw*>(right);
  double dot = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double x = Codec::Load(a[i]);
    const double y = Codec::Load(b[i]);
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  dots->dot += dot;
  dots->left_norm2 += aa;
  dots->right_norm2 += bb;
}

template <typename Codec>
void CombineAs(void* mine, const void* theirs, int64_t count, double mine_coeff,
               double their_coeff) {
  auto* a = static_cast<typename Codec::Raw*>(mine);
  const auto* b = static_cast<const typename Codec::Raw*>(theirs);
  for (int64_t i = 0; i < count; ++i) {
    a[i] = Codec::Store(mine_coeff * Codec::Load(a[i]) + their_coeff * Codec::Load(b[i]));
  }
}

}  // namespace

Coefficients CoefficientsOf(const Dots& dots) {
  Coefficients c;
  if (dots.left_norm2 >= kZeroNorm2) c.left = 1.0 - dots.dot / (2.0 * dots.left_norm2);
  if (dots.right_norm2 >= kZeroNorm2) c.right = 1.0 - dots.dot / (2.0 * dots.right_norm2);
  return c;
}

void AccumulateDots(DataType dtype, const void* left, const void* right, int64_t count,
                    Dots* dots) {
  switch (dtype) {
    case DataType::kFloat16: return DotsOf<Float16>(left, right, count, dots);
    case DataType::kBFloat16: return DotsOf<BFloat16>(left, right, count, dots);
    case DataType::kFloat32: return DotsOf<Native<float>>(left, right, count, dots);
    case DataType::kFloat64: return DotsOf<Native<double>>(left, right, count, dots);
    default: return;  // integer types are refused at submit (core/request_validator.cc)
  }
}

void Combine(DataType dtype, void* mine, const void* theirs, int64_t count, double mine_coeff,
             double their_coeff) {
  switch (dtype) {
    case DataType::kFloat16:
      return CombineAs<Float16>(mine, theirs, count, mine_coeff, their_coeff);
    case DataType::kBFloat16:
      return CombineAs<BFloat16>(mine, theirs, count, mine_coeff, their_coeff);
    case DataType::kFloat32:
      return CombineAs<Native<float>>(mine, theirs, count, mine_coeff, their_coeff);
    case DataType::kFloat64:
      return CombineAs<Native<double>>(mine, theirs, count, mine_coeff, their_coeff);
    default: return;
  }
}

Window KeptHalf(const Window& window, bool upper) {
  const int64_t middle = window.begin + window.count() / 2;
  return upper ? Window{middle, window.end} : Window{window.begin, middle};
}

Window GivenHalf(const Window& window, bool upper) { return KeptHalf(window, !upper); }

TensorLayout::TensorLayout(const std::vector<int64_t>& counts) {
  starts_.reserve(counts.size());
  ends_.reserve(counts.size());
  for (int64_t count : counts) {
    starts_.push_back(total_);
    total_ += count;
    ends_.push_back(total_);
  }
}

Window TensorLayout::Overlap(size_t i, const Window& window) const {
  const int64_t begin = std::max(starts_[i], window.begin);
  const int64_t end = std::min(ends_[i], window.end);
  return begin < end ? Window{begin, end} : Window{begin, begin};
}

void WindowDots(DataType dtype, const TensorLayout& layout, const Window& window, const char* mine,
                const char* theirs, bool upper, std::vector<Dots>* dots) {
  const int64_t element_size = DataTypeSize(dtype);
  dots->assign(layout.size(), Dots{});
  for (size_t i = 0; i < layout.size(); ++i) {
    const Window part = layout.Overlap(i, window);
    if (part.count() == 0) continue;
    const int64_t at = (part.begin - window.begin) * element_size;
    const char* left = upper ? theirs + at : mine + at;
    const char* right = upper ? mine + at : theirs + at;
    AccumulateDots(dtype, left, right, part.count(), &(*dots)[i]);
  }
}

void CombineWindow(DataType dtype, const TensorLayout& layout, const Window& window, char* mine,
                   const char* theirs, bool upper, const std::vector<Dots>& dots) {
  const int64_t element_size = DataTypeSize(dtype);
  for (size_t i = 0; i < layout.size(); ++i) {
    const Window part = layout.Overlap(i, window);
    if (part.count() == 0) continue;
    const Coefficients c = CoefficientsOf(dots[i]);
    const int64_t at = (part.begin - window.begin) * element_size;
    Combine(dtype, mine + at, theirs + at, part.count(), upper ? c.right : c.left,
            upper ? c.left : c.right);
  }
}

}  // namespace adasum
}  // namespace horde
