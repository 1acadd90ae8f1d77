#include "core/straggler_watch.h"

#include <unistd.h>

#include <vector>

#include "core/logging.h"

namespace horde {
namespace {

constexpr std::chrono::seconds kLogInterval(60);

std::string HostName() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? name : "unknown host";
}

double Seconds(StragglerWatch::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

StragglerWatch::StragglerWatch(int rank, bool log) : rank_(rank), log_(log), host_(HostName()) {}

Status StragglerWatch::EndRound(Clock::time_point latest_submission, Clock::time_point settled,
                                Transport* transport, bool* reported) {
  const double wait = latest_submission == Clock::time_point()
                          ? -1
                          : Seconds(settled - latest_submission);
  window_.AddRound(wait, Seconds(settled - start_));
  *reported = window_.full();
  return *reported ? Exchange(transport) : Status::Ok();
}

Status StragglerWatch::Exchange(Transport* transport) {
  std::vector<std::string> windows;
  HORDE_RETURN_IF_ERROR(transport->GatherToCoordinator(window_.TakeEncoded(host_), &windows));
  std::string encoded;
  if (rank_ == 0) encoded = EncodeReport(AnalyzeWaits(windows));
  HORDE_RETURN_IF_ERROR(transport->BroadcastFromCoordinator(&encoded));
  StragglerReport report;
  if (!DecodeReport(encoded, &report)) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    report_ = report;
  }
  const Clock::time_point now = Clock::now();
  if (rank_ == 0 && log_ && report.straggler >= 0 &&
      (last_logged_ == Clock::time_point() || now - last_logged_ >= kLogInterval)) {
    last_logged_ = now;
    HORDE_LOG(kInfo) << "straggler: " << DescribeStraggler(report);
  }
  return Status::Ok();
}

StragglerReport StragglerWatch::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

}  // namespace horde
