#include "topology/link_matrix.h"

#include <algorithm>
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

// The `hosts` line: one distinct name per row.
Status ParseHosts(const Row& hosts, size_t rows, LinkMatrix* matrix) {
  if (hosts.tokens.size() != rows) {
    return LineError(hosts.line, "hosts has " + std::to_string(hosts.tokens.size()) +
                                     " names; expected " + std::to_string(rows) +
                                     " (one per row, as many as the rows)");
  }
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (hosts.tokens[i] == hosts.tokens[j]) {
        return LineError(hosts.line, "host '" + hosts.tokens[i] + "' is named twice (rows " +
                                         std::to_string(j) + " and " + std::to_string(i) +
                                         "); expected one row per host");
      }
    }
  }
  matrix->set_hosts(hosts.tokens);
  return Status::Ok();
}

// The `racks` line (a rack number per row) and the `uplink` line (Gbit/s per rack).
Status ParseRacks(const Row& racks, const Row& uplink, size_t rows, LinkMatrix* matrix) {
  if (racks.line == 0 || uplink.line == 0) {
    const bool has_racks = racks.line != 0;
    return LineError(has_racks ? racks.line : uplink.line,
                     has_racks ? "racks without an 'uplink' line; expected both or neither"
                               : "uplink without a 'racks' line; expected both or neither");
  }
  if (racks.tokens.size() != rows) {
    return LineError(racks.line, "racks has " + std::to_string(racks.tokens.size()) +
                                     " values; expected " + std::to_string(rows) +
                                     " (one rack number per row)");
  }
  std::vector<int> rack(rows);
  for (size_t r = 0; r < rows; ++r) {
    const std::string& token = racks.tokens[r];
    auto [ptr, error] = std::from_chars(token.data(), token.data() + token.size(), rack[r]);
    if (error != std::errc() || ptr != token.data() + token.size() || rack[r] < 0 ||
        rack[r] >= static_cast<int>(rows)) {
      return LineError(racks.line, "'" + token + "' is not a rack number; expected 0 to " +
                                       std::to_string(rows - 1));
    }
  }
  const size_t count = static_cast<size_t>(*std::max_element(rack.begin(), rack.end())) + 1;
  if (uplink.tokens.size() != count) {
    return LineError(uplink.line, "uplink has " + std::to_string(uplink.tokens.size()) +
                                      " values; expected " + std::to_string(count) +
                                      " (one per rack, racks 0 to " + std::to_string(count - 1) +
                                      ")");
  }
  std::vector<double> rates(count);
  for (size_t k = 0; k < count; ++k) {
    HORDE_RETURN_IF_ERROR(ParseNumber(uplink.tokens[k], uplink.line, "Gbit/s", &rates[k]));
    if (rates[k] <= 0) return LineError(uplink.line, "an uplink of 0; expected Gbit/s above 0");
    rates[k] = GbitToBytes(rates[k]);
  }
  matrix->SetRacks(std::move(rack), std::move(rates));
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

void LinkMatrix::SetRacks(std::vector<int> rack, std::vector<double> uplink) {
  rack_ = std::move(rack);
  uplink_ = std::move(uplink);
}

LinkMatrix LinkMatrix::Restricted(const std::vector<int>& ranks) const {
  LinkMatrix out(static_cast<int>(ranks.size()));
  out.latency_seconds_ = latency_seconds_;
  out.uplink_ = uplink_;
  for (size_t i = 0; i < ranks.size(); ++i) {
    out.nic_[i] = Nic(ranks[i]);
    if (!hosts_.empty()) out.hosts_.push_back(hosts_[ranks[i]]);
    if (!rack_.empty()) out.rack_.push_back(rack_[ranks[i]]);
    for (size_t j = 0; j < ranks.size(); ++j) {
      out.SetLink(static_cast<int>(i), static_cast<int>(j), Link(ranks[i], ranks[j]));
    }
  }
  return out;
}

Status LinkMatrix::Parse(const std::string& text, LinkMatrix* out) {
  std::istringstream in(text);
  std::vector<Row> rows;
  Row nic, latency, hosts, racks, uplink;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::vector<std::string> tokens = Tokens(line);
    if (tokens.empty()) continue;
    const std::string keyword = tokens[0];
    Row* keyed = keyword == "nic"          ? &nic
                 : keyword == "latency_us" ? &latency
                 : keyword == "hosts"      ? &hosts
                 : keyword == "racks"      ? &racks
                 : keyword == "uplink"     ? &uplink
                                           : nullptr;
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
  if (hosts.line != 0) HORDE_RETURN_IF_ERROR(ParseHosts(hosts, rows.size(), &matrix));
  if (racks.line != 0 || uplink.line != 0) {
    HORDE_RETURN_IF_ERROR(ParseRacks(racks, uplink, rows.size(), &matrix));
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
  if (!hosts_.empty()) {
    text += "hosts";
    for (const std::string& host : hosts_) text += " " + host;
    text += "\n";
  }
  bool any_nic = false;
  for (double nic : nic_) any_nic = any_nic || nic > 0;
  if (any_nic) {
    text += "# the most each rank sends (and receives) over all its links at once\nnic";
    for (double nic : nic_) text += " " + Number(BytesToGbit(nic));
    text += "\n";
  }
  if (!uplink_.empty()) {
    text += "# each rank's rack, and each rack's uplink (Gbit/s each way)\nracks";
    for (int rack : rack_) text += " " + std::to_string(rack);
    text += "\nuplink";
    for (double rate : uplink_) text += " " + Number(BytesToGbit(rate));
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
