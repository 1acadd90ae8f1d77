#include "core/link_matrix.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace horde {
namespace {

Status LineError(int line, const std::string& what) {
  return Status::InvalidArgument("link matrix line " + std::to_string(line) + ": " + what);
}

// A non-negative finite number (the whole token), for `what` ("Gbit/s").
Status ParseNumber(const std::string& token, int line, const std::string& what, double* out) {
  const char* end = token.data() + token.size();
  auto [ptr, error] = std::from_chars(token.data(), end, *out);
  if (error != std::errc() || ptr != end || !std::isfinite(*out)) {
    return LineError(line, "'" + token + "' is not a number of " + what);
  }
  if (*out < 0) return LineError(line, token + " is negative; expected " + what + " >= 0");
  return Status::Ok();
}

std::vector<std::string> Tokens(const std::string& line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::vector<std::string> tokens;
  for (std::string token; in >> token;) tokens.push_back(token);
  return tokens;
}

struct Row {
  int line = 0;
  std::vector<std::string> tokens;
};

// Row `r` (rank r) into `out`, which has one entry per rank.
Status ParseRow(const Row& row, int r, std::vector<double>* out) {
  if (row.tokens.size() != out->size()) {
    return LineError(row.line, "expected " + std::to_string(out->size()) +
                                   " values (one per rank), found " +
                                   std::to_string(row.tokens.size()));
  }
  for (size_t c = 0; c < out->size(); ++c) {
    const std::string& token = row.tokens[c];
    const bool diagonal = static_cast<int>(c) == r;
    if (token == "-" && diagonal) {
      (*out)[c] = 0;
      continue;
    }
    if (token == "-") {
      return LineError(row.line, "'-' off the diagonal (column " + std::to_string(c) +
                                     "); expected a number of Gbit/s, 0 for no link");
    }
    HORDE_RETURN_IF_ERROR(ParseNumber(token, row.line, "Gbit/s", &(*out)[c]));
    if (diagonal && (*out)[c] != 0) {
      return LineError(row.line, "'" + token + "' on the diagonal (rank " + std::to_string(r) +
                                     " to itself); expected '-' or 0");
    }
  }
  return Status::Ok();
}

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.10g", value);
  return text;
}

}  // namespace

LinkMatrix::LinkMatrix(int size)
    : size_(size), links_(static_cast<size_t>(size) * size, 0.0), nic_(size, 0.0) {}

void LinkMatrix::SetLink(int from, int to, double bytes_per_second) {
  links_[Index(from, to)] = bytes_per_second;
}

LinkMatrix LinkMatrix::Restricted(const std::vector<int>& ranks) const {
  LinkMatrix out(static_cast<int>(ranks.size()));
  out.latency_seconds_ = latency_seconds_;
  for (size_t i = 0; i < ranks.size(); ++i) {
    out.nic_[i] = Nic(ranks[i]);
    for (size_t j = 0; j < ranks.size(); ++j) {
      out.SetLink(static_cast<int>(i), static_cast<int>(j), Link(ranks[i], ranks[j]));
    }
  }
  return out;
}

Status LinkMatrix::Parse(const std::string& text, LinkMatrix* out) {
  std::istringstream in(text);
  std::vector<Row> rows;
  Row nic, latency;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::vector<std::string> tokens = Tokens(line);
    if (tokens.empty()) continue;
    const std::string keyword = tokens[0];
    Row* keyed = keyword == "nic" ? &nic : keyword == "latency_us" ? &latency : nullptr;
    if (keyed == nullptr) {
      rows.push_back({number, std::move(tokens)});
      continue;
    }
    if (keyed->line != 0) {
      return LineError(number, "a second '" + keyword + "' line (the first is line " +
                                   std::to_string(keyed->line) + "); expected one");
    }
    tokens.erase(tokens.begin());
    *keyed = {number, std::move(tokens)};
  }
  if (rows.empty()) {
    return Status::InvalidArgument(
        "link matrix: no rows; expected one row of Gbit/s per rank (and at least one rank)");
  }
  LinkMatrix matrix(static_cast<int>(rows.size()));
  std::vector<double> values(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    HORDE_RETURN_IF_ERROR(ParseRow(rows[r], static_cast<int>(r), &values));
    for (size_t c = 0; c < rows.size(); ++c) {
      matrix.SetLink(static_cast<int>(r), static_cast<int>(c), GbitToBytes(values[c]));
    }
  }
  if (nic.line != 0) {
    if (nic.tokens.size() != rows.size()) {
      return LineError(nic.line, "nic has " + std::to_string(nic.tokens.size()) +
                                     " values; expected " + std::to_string(rows.size()) +
                                     " (one per rank, as many as the rows)");
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      double gbit = 0;
      HORDE_RETURN_IF_ERROR(ParseNumber(nic.tokens[r], nic.line, "Gbit/s", &gbit));
      matrix.SetNic(static_cast<int>(r), GbitToBytes(gbit));
    }
  }
  if (latency.line != 0) {
    if (latency.tokens.size() != 1) {
      return LineError(latency.line, "latency_us has " + std::to_string(latency.tokens.size()) +
                                         " values; expected one number of microseconds");
    }
    double us = 0;
    HORDE_RETURN_IF_ERROR(ParseNumber(latency.tokens[0], latency.line, "microseconds", &us));
    matrix.set_latency_seconds(us * 1e-6);
  }
  *out = std::move(matrix);
  return Status::Ok();
}

std::string LinkMatrix::Format() const {
  std::string text = "# horde link matrix: " + std::to_string(size_) +
                     " ranks; Gbit/s from each row's rank to each column's, 0: no link\n";
  text += "latency_us " + Number(latency_seconds_ * 1e6) + "\n";
  bool any_nic = false;
  for (double nic : nic_) any_nic = any_nic || nic > 0;
  if (any_nic) {
    text += "# the most each rank sends (and receives) over all its links at once\nnic";
    for (double nic : nic_) text += " " + Number(BytesToGbit(nic));
    text += "\n";
  }
  for (int r = 0; r < size_; ++r) {
    for (int c = 0; c < size_; ++c) {
      text += c == 0 ? "" : " ";
      text += c == r ? "-" : Number(BytesToGbit(Link(r, c)));
    }
    text += "\n";
  }
  return text;
}

}  // namespace horde
