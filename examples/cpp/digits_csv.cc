#include "digits_csv.h"

#include <zlib.h>

#include <memory>
#include <sstream>
#include <stdexcept>

namespace {

std::vector<float> ParseLine(const std::string& line, int number) {
  const std::string where = "digits CSV line " + std::to_string(number) + ": ";
  std::vector<float> values;
  std::istringstream fields(line);
  std::string field;
  while (std::getline(fields, field, ',')) {
    try {
      values.push_back(std::stof(field));
    } catch (const std::logic_error&) {
      throw std::runtime_error(where + "'" + field + "' is not a number");
    }
  }
  if (values.size() != Digits::kPixels + 1) {
    throw std::runtime_error(where + "expected " + std::to_string(Digits::kPixels + 1) +
                             " values, got " + std::to_string(values.size()));
  }
  return values;
}

}  // namespace

bool ReadDigitsCsv(const std::string& path, Digits* digits) {
  // gzread reads plain files as they are, so one reader serves both forms.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) return false;
  char buffer[4096];
  int number = 0;
  while (gzgets(file.get(), buffer, sizeof buffer) != nullptr) {
    std::string line(buffer);
    ++number;
    if (line.find_first_not_of(" \r\n") == std::string::npos) continue;
    std::vector<float> values = ParseLine(line, number);
    for (int i = 0; i < Digits::kPixels; ++i) digits->pixels.push_back(values[i] / 16.0f);
    digits->labels.push_back(static_cast<int64_t>(values[Digits::kPixels]));
  }
  return true;
}
