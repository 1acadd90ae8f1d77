#include "mpi_ops/link_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "topology/pair_rounds.h"
#include "topology/rack_finder.h"

namespace horde {
namespace mpi {
namespace {

// Tags of the probe's messages on the runtime's communicator; nothing else runs then.
constexpr int kPingTag = 0x7E10;
constexpr int kDataTag = 0x7E11;
constexpr int kPingPongs = 20;  // the fastest kept: a busy host delays most of them
constexpr int kWarmUpBytes = 256 << 10;
constexpr int kTimedExchanges = 2;

double Now() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Sends and receives `bytes` with `peer` at once; the seconds until this rank's receive
// completed (the rate from `peer`, measured while the reverse direction is busy too).
Status Exchange(MPI_Comm comm, int peer, std::vector<char>* out, std::vector<char>* in, int bytes,
                double* seconds) {
  MPI_Request requests[2];
  const double start = Now();
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Irecv(in->data(), bytes, MPI_BYTE, peer, kDataTag, comm, &requests[0]), "MPI_Irecv"));
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Isend(out->data(), bytes, MPI_BYTE, peer, kDataTag, comm, &requests[1]), "MPI_Isend"));
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Wait(&requests[0], MPI_STATUS_IGNORE), "MPI_Wait"));
  *seconds = Now() - start;
  return CheckMpi(MPI_Wait(&requests[1], MPI_STATUS_IGNORE), "MPI_Wait");
}

}  // namespace

LinkProbe::LinkProbe(MPI_Comm comm_) : comm_(comm_) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Status LinkProbe::MeasureLatency(int peer, double* latency) {
  const bool first = rank_ < peer;
  char ping = 0;
  double best_round_trip = 1e9;
  for (int i = 0; i < kPingPongs; ++i) {
    const double start = Now();
    for (int leg = 0; leg < 2; ++leg) {
      if ((leg == 0) == first) {
        HORDE_RETURN_IF_ERROR(
            CheckMpi(MPI_Send(&ping, 1, MPI_BYTE, peer, kPingTag, comm_), "MPI_Send"));
      } else {
        HORDE_RETURN_IF_ERROR(CheckMpi(
            MPI_Recv(&ping, 1, MPI_BYTE, peer, kPingTag, comm_, MPI_STATUS_IGNORE), "MPI_Recv"));
      }
    }
    best_round_trip = std::min(best_round_trip, Now() - start);
  }
  *latency = std::max(*latency, best_round_trip / 2);
  return Status::Ok();
}

Status LinkProbe::MeasureRate(int peer, std::vector<double>* rates) {
  std::vector<char> out(kProbeBytes, 1), in(kProbeBytes);
  double seconds = 0;
  // The warm-up opens the connection and its windows; the timed exchanges follow, the
  // fastest kept (a rank descheduled mid-exchange reads as a slow link).
  HORDE_RETURN_IF_ERROR(Exchange(comm_, peer, &out, &in, kWarmUpBytes, &seconds));
  double best = 1e9;
  for (int i = 0; i < kTimedExchanges; ++i) {
    HORDE_RETURN_IF_ERROR(Exchange(comm_, peer, &out, &in, kProbeBytes, &seconds));
    best = std::min(best, seconds);
  }
  const int n = size_;
  (*rates)[peer * n + rank_] = kProbeBytes / std::max(best, 1e-9);
  return Status::Ok();
}

Status LinkProbe::AllAtOnce(const std::vector<int>& send_bytes,
                            const std::vector<int>& receive_bytes, double* received,
                            double* seconds) {
  const int n = static_cast<int>(send_bytes.size());
  int64_t incoming = 0, outgoing = 0;
  for (int j = 0; j < n; ++j) {
    incoming += receive_bytes[j];
    outgoing = std::max<int64_t>(outgoing, send_bytes[j]);
  }
  std::vector<char> out(std::max<int64_t>(outgoing, 1), 1), in(std::max<int64_t>(incoming, 1));
  *seconds = 1e9;
  *received = static_cast<double>(incoming);
  // The best of two: a rank descheduled mid-transfer reads as a slow NIC.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<MPI_Request> sends, receives;
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Barrier(comm_), "MPI_Barrier"));
    const double start = Now();
    char* at = in.data();
    for (int j = 0; j < n; ++j) {
      if (receive_bytes[j] == 0) continue;
      receives.emplace_back();
      HORDE_RETURN_IF_ERROR(
          CheckMpi(MPI_Irecv(at, receive_bytes[j], MPI_BYTE, j, kDataTag, comm_, &receives.back()),
                   "MPI_Irecv"));
      at += receive_bytes[j];
    }
    for (int j = 0; j < n; ++j) {
      if (send_bytes[j] == 0) continue;
      sends.emplace_back();
      HORDE_RETURN_IF_ERROR(CheckMpi(
          MPI_Isend(out.data(), send_bytes[j], MPI_BYTE, j, kDataTag, comm_, &sends.back()),
          "MPI_Isend"));
    }
    // Timed to the last byte received: a send completes once its data is in the socket's
    // buffers, long before it has crossed the NIC, so send times read high.
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Waitall(static_cast<int>(receives.size()), receives.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall"));
    *seconds = std::min(*seconds, std::max(Now() - start, 1e-9));
    HORDE_RETURN_IF_ERROR(
        CheckMpi(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE),
                 "MPI_Waitall"));
  }
  return Status::Ok();
}

Status LinkProbe::MeasureNic(const LinkMatrix& links, double* nic) {
  const int n = links.size();
  const int me = rank_;
  auto total_from = [&](int rank) {
    double total = 0;
    for (int j = 0; j < n; ++j) total += j == rank ? 0 : links.Link(rank, j);
    return total;
  };
  // Each rank's share to j follows the pair's rate, so all its sends would end together
  // if only the links limited them.
  auto share = [&](int from, int to) {
    const double total = total_from(from);
    return total <= 0 || from == to
               ? 0
               : static_cast<int>(kAllAtOnceBytes * links.Link(from, to) / total);
  };
  std::vector<int> send_bytes(n), receive_bytes(n);
  double links_in = 0, fastest = 0;
  for (int j = 0; j < n; ++j) {
    send_bytes[j] = share(me, j);
    receive_bytes[j] = share(j, me);
    links_in += j == me ? 0 : links.Link(j, me);
    fastest = std::max({fastest, links.Link(j, me), links.Link(me, j)});
  }
  double received = 0, seconds = 0;
  HORDE_RETURN_IF_ERROR(AllAtOnce(send_bytes, receive_bytes, &received, &seconds));
  // Everyone sends at once, so every NIC is as busy both ways, and the rate in is the
  // NIC's. Receiving as fast as the links alone allow shows no shared limit; a NIC is
  // recorded only when it held the receives clearly below that. Timed to the last of
  // several flows, the rate reads low (the flows do not share fairly, and the cores are
  // busy): the NIC carried at least the fastest single flow through it.
  const double rate = received / seconds;
  *nic = rate < 0.8 * links_in ? std::max(rate, fastest) : 0;
  return Status::Ok();
}

Status LinkProbe::MeasureUplinks(const std::vector<int>& rack, std::vector<double>* uplink) {
  const int n = static_cast<int>(rack.size());
  const int me = rank_;
  auto across = [&](int rank) {
    int count = 0;
    for (int j = 0; j < n; ++j) count += rack[j] != rack[rank] ? 1 : 0;
    return count;
  };
  // Every rank sends to every rank of the other racks at once, in even shares: each
  // rack's uplink is busy both ways, and what its ranks receive together is its rate.
  std::vector<int> send_bytes(n, 0), receive_bytes(n, 0);
  for (int j = 0; j < n; ++j) {
    if (rack[j] == rack[me]) continue;
    send_bytes[j] = kAllAtOnceBytes / across(me);
    receive_bytes[j] = kAllAtOnceBytes / across(j);
  }
  // Per rank: bytes received and seconds, agreed by one reduction.
  std::vector<double> mine(2 * n, 0.0);
  HORDE_RETURN_IF_ERROR(AllAtOnce(send_bytes, receive_bytes, &mine[2 * me], &mine[2 * me + 1]));
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Allreduce(MPI_IN_PLACE, mine.data(), 2 * n, MPI_DOUBLE, MPI_MAX, comm_),
               "MPI_Allreduce"));
  // A rack's rate: its ranks' rates added up (each rank's bytes over its own time; over
  // the slowest rank's time, a rank left behind would read as a slow uplink).
  uplink->assign(1 + *std::max_element(rack.begin(), rack.end()), 0.0);
  for (int v = 0; v < n; ++v) (*uplink)[rack[v]] += mine[2 * v] / std::max(mine[2 * v + 1], 1e-9);
  return Status::Ok();
}

Status LinkProbe::Measure(LinkMatrix* links) {
  const int n = size_;
  const int me = rank_;
  // Rates (row from, column to), then the NICs, then the latency: one reduction agrees all.
  std::vector<double> rates(static_cast<size_t>(n) * n, 0.0);
  double latency = 0;
  // Within a round the pairs ping first, then stream: a ping behind another pair's
  // stream in a switch's queue would read as latency.
  for (const auto& round : PairRounds(n)) {
    int peer = -1;
    for (const auto& [a, b] : round) peer = a == me ? b : b == me ? a : peer;
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Barrier(comm_), "MPI_Barrier"));
    if (peer >= 0) HORDE_RETURN_IF_ERROR(MeasureLatency(peer, &latency));
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Barrier(comm_), "MPI_Barrier"));
    if (peer >= 0) HORDE_RETURN_IF_ERROR(MeasureRate(peer, &rates));
  }
  std::vector<double> agreed(rates.size() + 1);
  std::copy(rates.begin(), rates.end(), agreed.begin());
  agreed.back() = latency;
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Allreduce(MPI_IN_PLACE, agreed.data(), static_cast<int>(agreed.size()),
                             MPI_DOUBLE, MPI_MAX, comm_),
               "MPI_Allreduce"));
  LinkMatrix measured(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) measured.SetLink(i, j, agreed[static_cast<size_t>(i) * n + j]);
    }
  }
  measured.set_latency_seconds(agreed.back());
  std::vector<double> nics(n, 0.0);
  if (n > 2) HORDE_RETURN_IF_ERROR(MeasureNic(measured, &nics[me]));
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Allreduce(MPI_IN_PLACE, nics.data(), n, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce"));
  for (int i = 0; i < n; ++i) measured.SetNic(i, nics[i]);
  // Every rank finds the same racks in the same agreed matrix.
  const std::vector<int> rack = FindRacks(measured);
  if (!rack.empty()) {
    std::vector<double> uplink;
    HORDE_RETURN_IF_ERROR(MeasureUplinks(rack, &uplink));
    RecordRacks(rack, uplink, &measured);
  }
  *links = std::move(measured);
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
