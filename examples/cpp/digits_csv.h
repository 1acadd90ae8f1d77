#pragma once

#include <cstdint>
#include <string>
#include <vector>

// The digits data set: 8x8 images of handwritten digits, 10 classes.
struct Digits {
  static constexpr int kPixels = 64;
  std::vector<float> pixels;    // kPixels per image, scaled to [0, 1]
  std::vector<int64_t> labels;  // 0..9
};

// Where Debian's python3-sklearn installs it.
constexpr const char* kDebianDigitsCsv =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

// Reads scikit-learn's digits CSV (gzipped or not): 64 pixel values from 0 to 16, then
// the label, per line. Returns false if the file cannot be opened; throws
// std::runtime_error naming the line if it is malformed.
bool ReadDigitsCsv(const std::string& path, Digits* digits);
