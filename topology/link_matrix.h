#pragma once

#include <string>
#include <vector>

#include "horde/status.h"

namespace horde {

// Link bandwidths between ranks, measured at init or read from a file: what the
// topology-aware collectives (topology/tree_packing.h) are planned over.
//
// The text form (Parse, Format), also read by test beds outside C++:
//   # comments start with '#'; blank lines ignored
//   latency_us 40            # optional, default 0
//   hosts a b c d            # optional: the host of each row, which the job maps its
//                            # ranks onto by host name (topology/link_matrix_hosts.h)
//   nic 10 10 10 10          # optional: per-rank NIC limit in Gbit/s, 0 = none
//   racks 0 0 1 1            # optional: the rack of each row, numbered from 0; racks
//   uplink 0.5 0.5           # reach each other only through their uplinks (Gbit/s per
//                            # rack, each way), which all flows between racks share
//   -    2    0.25 0.25      # one row per rank: Gbit/s from this rank (row) to each
//   2    -    0.25 0.25      # rank (column); '-' (or 0) on the diagonal; 0 off it: no link
//   0.25 0.25 -    2
//   0.25 0.25 2    -
// 1 Gbit/s is 1e9/8 bytes per second.
class LinkMatrix {
 public:
  LinkMatrix() = default;
  // `size` ranks with no links, no NIC limits and latency 0.
  explicit LinkMatrix(int size);

  int size() const { return size_; }
  // Bytes per second `from` can send to `to` while the reverse direction is busy too;
  // 0: no direct link.
  double Link(int from, int to) const { return links_[Index(from, to)]; }
  void SetLink(int from, int to, double bytes_per_second);
  // The most `rank` can send in total (and receive in total) over all its links at once:
  // a NIC its links share. 0: no limit beyond the links.
  double Nic(int rank) const { return nic_[rank]; }
  void SetNic(int rank, double bytes_per_second) { nic_[rank] = bytes_per_second; }
  // Racks: 0 when the matrix names none (no shared uplinks); else every rank's rack is
  // in [0, racks()), and traffic between two racks passes both racks' uplinks, each of
  // Uplink(rack) bytes per second in each direction.
  int racks() const { return static_cast<int>(uplink_.size()); }
  int Rack(int rank) const { return rack_.empty() ? 0 : rack_[rank]; }
  double Uplink(int rack) const { return uplink_[rack]; }
  // `rack` has one entry per rank, `uplink` one per rack (both empty: no racks).
  void SetRacks(std::vector<int> rack, std::vector<double> uplink);
  // The host each rank (row) stands for; empty when the text named none (rows are then
  // the job's ranks in order).
  const std::vector<std::string>& hosts() const { return hosts_; }
  void set_hosts(std::vector<std::string> hosts) { hosts_ = std::move(hosts); }
  // Per message, on any link.
  double latency_seconds() const { return latency_seconds_; }
  void set_latency_seconds(double seconds) { latency_seconds_ = seconds; }

  // The matrix over `ranks` only (a process set's world ranks, each in [0, size())),
  // renumbered 0..k-1 in that order; host names follow their rows.
  LinkMatrix Restricted(const std::vector<int>& ranks) const;

  // Reads the text form into `out`; errors name the line and what was expected.
  static Status Parse(const std::string& text, LinkMatrix* out);
  // The text form, with a comment header; numbers keep 10 significant digits, so
  // Parse(Format()) gives the same matrix to about 1e-9 relative. Ranks that must plan
  // alike should all plan from one parsed text rather than some from the original.
  std::string Format() const;

 private:
  size_t Index(int from, int to) const { return static_cast<size_t>(from) * size_ + to; }

  int size_ = 0;
  std::vector<double> links_;  // size_ x size_, row `from`
  std::vector<double> nic_;
  std::vector<std::string> hosts_;
  std::vector<int> rack_;
  std::vector<double> uplink_;
  double latency_seconds_ = 0;
};

// Gbit/s (the text form's unit) to bytes per second, and back.
constexpr double GbitToBytes(double gbit_per_second) { return gbit_per_second * 1e9 / 8; }
constexpr double BytesToGbit(double bytes_per_second) { return bytes_per_second * 8 / 1e9; }

}  // namespace horde
