#include "launcher/host_name.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstdio>

#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

constexpr size_t kMaxNameLength = 253;
constexpr size_t kMaxLabelLength = 63;
constexpr const char* kExpected =
    "expected a DNS name (letters, digits and '-' in dot-separated labels of 1 to 63 "
    "characters that do not start or end with '-', 253 characters at most), an IPv4 "
    "address, or an IPv6 address in brackets such as [fe80::1]";

bool IsLabelChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }

std::optional<std::string> BracketedIpv6Problem(const std::string& name) {
  if (name.back() != ']') return "an IPv6 address must end with ']'";
  const std::string address = name.substr(1, name.size() - 2);
  if (address.find('%') != std::string::npos) {
    return "it has a zone index ('%'), which mpirun and ssh read differently; use the "
           "interface's global address or --network-interface";
  }
  in6_addr parsed;
  if (inet_pton(AF_INET6, address.c_str(), &parsed) != 1) return "it is not an IPv6 address";
  return std::nullopt;
}

bool LooksLikeIpv4(const std::string& name) {
  for (char c : name) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

std::optional<std::string> DnsNameProblem(const std::string& name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string label = name.substr(start, end - start);
    if (label.empty()) return "it has an empty label (two dots, or a dot at an end)";
    if (label.size() > kMaxLabelLength) {
      return "its label " + QuotedForMessage(label.substr(0, 20) + "...") +
             " is longer than 63 characters";
    }
    for (char c : label) {
      if (!IsLabelChar(c)) return "it contains " + QuotedForMessage(std::string(1, c));
    }
    if (label.front() == '-' || label.back() == '-') {
      return "its label " + QuotedForMessage(label) + " starts or ends with '-'";
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> HostNameProblem(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (name.front() == '-')
    return "it starts with '-', which ssh and mpirun would read as an option";
  if (name.size() > kMaxNameLength) return "it is longer than 253 characters";
  if (name.front() == '[') return BracketedIpv6Problem(name);
  if (LooksLikeIpv4(name)) {
    in_addr parsed;
    if (inet_pton(AF_INET, name.c_str(), &parsed) != 1) return "it is not an IPv4 address";
    return std::nullopt;
  }
  return DnsNameProblem(name);
}

void CheckHostName(const std::string& name, const std::string& source) {
  if (auto problem = HostNameProblem(name)) {
    throw UsageError(source + ": host name " + QuotedForMessage(name) +
                     " is not allowed: " + *problem + "; " + kExpected);
  }
}

std::string QuotedForMessage(const std::string& name) {
  std::string quoted = "'";
  for (char c : name.substr(0, 300)) {
    if (std::isprint(static_cast<unsigned char>(c))) {
      quoted += c;
    } else {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\x%02x", static_cast<unsigned char>(c));
      quoted += escape;
    }
  }
  return quoted + (name.size() > 300 ? "...'" : "'");
}

size_t SlotsColon(const std::string& entry) {
  if (!entry.empty() && entry.front() == '[') {
    size_t closing = entry.find(']');
    return closing == std::string::npos ? std::string::npos : entry.find(':', closing);
  }
  return entry.rfind(':');
}

}  // namespace horde::launcher
