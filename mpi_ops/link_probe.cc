#include "mpi_ops/link_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/pair_rounds.h"

namespace horde {
namespace mpi {
namespace {

// Tags of the probe's messages on the runtime's communicator; nothing else runs then.
constexpr int kPingTag = 0x7E10;
constexpr int kDataTag = 0x7E11;
constexpr int kPingPongs = 5;
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

Status LinkProbe::MeasurePair(int peer, std::vector<double>* rates, double* latency) {
  const MPI_Comm comm = context_.world();
  const bool first = context_.topology().rank < peer;
  char ping = 0;
  double best_round_trip = 1e9;
  for (int i = 0; i < kPingPongs; ++i) {
    const double start = Now();
    for (int leg = 0; leg < 2; ++leg) {
      if ((leg == 0) == first) {
        HORDE_RETURN_IF_ERROR(
            CheckMpi(MPI_Send(&ping, 1, MPI_BYTE, peer, kPingTag, comm), "MPI_Send"));
      } else {
        HORDE_RETURN_IF_ERROR(CheckMpi(
            MPI_Recv(&ping, 1, MPI_BYTE, peer, kPingTag, comm, MPI_STATUS_IGNORE), "MPI_Recv"));
      }
    }
    best_round_trip = std::min(best_round_trip, Now() - start);
  }
  *latency = std::max(*latency, best_round_trip / 2);
  std::vector<char> out(kProbeBytes, 1), in(kProbeBytes);
  double seconds = 0;
  // The warm-up opens the connection and its windows; the timed exchanges follow, the
  // fastest kept (a rank descheduled mid-exchange reads as a slow link).
  HORDE_RETURN_IF_ERROR(Exchange(comm, peer, &out, &in, kWarmUpBytes, &seconds));
  double best = 1e9;
  for (int i = 0; i < kTimedExchanges; ++i) {
    HORDE_RETURN_IF_ERROR(Exchange(comm, peer, &out, &in, kProbeBytes, &seconds));
    best = std::min(best, seconds);
  }
  const int n = context_.topology().size;
  (*rates)[peer * n + context_.topology().rank] = kProbeBytes / std::max(best, 1e-9);
  return Status::Ok();
}

Status LinkProbe::MeasureNic(const LinkMatrix& links, double* nic) {
  const int n = links.size();
  const int me = context_.topology().rank;
  auto total_from = [&](int rank) {
    double total = 0;
    for (int j = 0; j < n; ++j) total += j == rank ? 0 : links.Link(rank, j);
    return total;
  };
  // Each rank's share to j follows the pair's rate, so all its sends would end together
  // if only the links limited them.
  auto share = [&](int from, int to) {
    const double total = total_from(from);
    return total <= 0 ? 0 : static_cast<int>(kProbeBytes * links.Link(from, to) / total);
  };
  size_t incoming = 0;
  for (int j = 0; j < n; ++j) incoming += j == me ? 0 : share(j, me);
  std::vector<char> out(kProbeBytes, 1), in(incoming);
  std::vector<MPI_Request> sends;
  std::vector<MPI_Request> receives;
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Barrier(context_.world()), "MPI_Barrier"));
  const double start = Now();
  char* at = in.data();
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    receives.emplace_back();
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Irecv(at, share(j, me), MPI_BYTE, j, kDataTag, context_.world(), &receives.back()),
        "MPI_Irecv"));
    at += share(j, me);
  }
  int sent = 0;
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    sends.emplace_back();
    sent += share(me, j);
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Isend(out.data(), share(me, j), MPI_BYTE, j, kDataTag, context_.world(), &sends.back()),
        "MPI_Isend"));
  }
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE),
               "MPI_Waitall"));
  const double seconds = std::max(Now() - start, 1e-9);
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Waitall(static_cast<int>(receives.size()), receives.data(), MPI_STATUSES_IGNORE),
               "MPI_Waitall"));
  // Sending all at once as fast as the links alone allow shows no shared limit; a NIC
  // is recorded only when it held the sends clearly below that.
  const double rate = sent / seconds;
  *nic = rate < 0.8 * total_from(me) ? rate : 0;
  return Status::Ok();
}

Status LinkProbe::Measure(LinkMatrix* links) {
  const int n = context_.topology().size;
  const int me = context_.topology().rank;
  const MPI_Comm comm = context_.world();
  // Rates (row from, column to), then the NICs, then the latency: one reduction agrees all.
  std::vector<double> rates(static_cast<size_t>(n) * n, 0.0);
  double latency = 0;
  for (const auto& round : PairRounds(n)) {
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Barrier(comm), "MPI_Barrier"));
    for (const auto& [a, b] : round) {
      if (a == me || b == me) HORDE_RETURN_IF_ERROR(MeasurePair(a == me ? b : a, &rates, &latency));
    }
  }
  std::vector<double> agreed(rates.size() + 1);
  std::copy(rates.begin(), rates.end(), agreed.begin());
  agreed.back() = latency;
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Allreduce(MPI_IN_PLACE, agreed.data(), static_cast<int>(agreed.size()),
                             MPI_DOUBLE, MPI_MAX, comm),
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
      MPI_Allreduce(MPI_IN_PLACE, nics.data(), n, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce"));
  for (int i = 0; i < n; ++i) measured.SetNic(i, nics[i]);
  *links = std::move(measured);
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
