#include "core/timeline.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/logging.h"

namespace horde {
namespace {

constexpr const char* kNegotiatePhase = "NEGOTIATE";
constexpr const char* kWaitingPhase = "WAITING_FOR_RANKS";
constexpr const char* kFrameworkWaitEvent = "FRAMEWORK_WAIT";
constexpr const char* kCycleMarker = "CYCLE_START";
constexpr const char* kDroppedMarker = "DROPPED_EVENTS";

// "ALLREDUCE" for allreduce: the outer event's name.
std::string OperationLabel(OpType op) {
  std::string label = OpTypeName(op);
  for (char& c : label) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return label;
}

}  // namespace

Timeline::Timeline(size_t queue_capacity, size_t max_rows)
    : queue_capacity_(queue_capacity), max_rows_(max_rows) {}

Timeline::~Timeline() { Stop(); }

Status Timeline::Start(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> control(control_mutex_);
  Status previous = CloseWriter(DetachWriter());
  if (!previous.ok()) HORDE_LOG(kWarning) << previous.message();
  std::unique_ptr<TimelineWriter> writer;
  // Wake the writer when the queue is half full, or at kMaxWakeBatch: often enough that
  // a small queue drains, seldom enough that waking costs little per event.
  size_t wake_batch = std::max<size_t>(1, std::min(kMaxWakeBatch, queue_capacity_ / 2));
  HORDE_RETURN_IF_ERROR(TimelineWriter::Open(path, wake_batch, &writer));
  std::lock_guard<std::mutex> lock(mutex_);
  writer_ = std::move(writer);
  mark_cycles_ = mark_cycles;
  start_time_ = Clock::now();
  rows_.clear();
  framework_waits_ = 0;
  open_events_ = 0;
  dropped_ = 0;
  active_.store(true, std::memory_order_release);
  return Status::Ok();
}

Status Timeline::Stop() {
  std::lock_guard<std::mutex> control(control_mutex_);
  return CloseWriter(DetachWriter());
}

std::unique_ptr<TimelineWriter> Timeline::DetachWriter() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (writer_ == nullptr) return nullptr;
  active_.store(false, std::memory_order_release);
  for (auto& entry : rows_) {
    Row& row = entry.second;
    ClosePhase(&row);
    if (row.operation_open) EndOpen(&row, NowMicros());
    row.operation_open = false;
  }
  writer_->Push({TimelineEvent::Kind::kInstant, 0, NowMicros(), kDroppedMarker, dropped_});
  return std::move(writer_);
}

// Outside mutex_: joining the writer thread waits on the disk, recorders must not.
Status Timeline::CloseWriter(std::unique_ptr<TimelineWriter> writer) {
  return writer == nullptr ? Status::Ok() : writer->Close();
}

int64_t Timeline::dropped_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

int64_t Timeline::NowMicros() const { return MicrosAt(Clock::now()); }

int64_t Timeline::MicrosAt(Clock::time_point time) const {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::microseconds>(time - start_time_).count());
}

Timeline::Row* Timeline::FindOrAddRow(const std::string& name) {
  auto found = rows_.find(name);
  if (found != rows_.end()) return &found->second;
  if (rows_.size() >= max_rows_) {
    ++dropped_;
    return nullptr;
  }
  Row row;
  row.tid = static_cast<int32_t>(rows_.size()) + 1;  // tid 0 is the global row
  if (!TryPushWithRoom({TimelineEvent::Kind::kRowName, row.tid, 0, name}, 0)) return nullptr;
  return &rows_.emplace(name, row).first->second;
}

bool Timeline::TryPushWithRoom(TimelineEvent event, size_t closing_events) {
  size_t needed = open_events_ + closing_events;
  if (needed >= queue_capacity_ || !writer_->TryPush(std::move(event), queue_capacity_ - needed)) {
    ++dropped_;
    return false;
  }
  return true;
}

bool Timeline::TryBegin(Row* row, std::string label, int64_t ts_us) {
  ts_us = std::max(ts_us, row->last_us);
  // Room for this event and for its closing event, which must never be refused.
  if (!TryPushWithRoom({TimelineEvent::Kind::kBegin, row->tid, ts_us, std::move(label)}, 1)) {
    return false;
  }
  row->last_us = ts_us;
  ++open_events_;
  return true;
}

void Timeline::EndOpen(Row* row, int64_t ts_us) {
  row->last_us = std::max(ts_us, row->last_us);
  writer_->Push({TimelineEvent::Kind::kEnd, row->tid, row->last_us, std::string()});
  --open_events_;
}

void Timeline::PushPhase(Row* row, const char* label, int64_t from_us, int64_t to_us) {
  if (TryBegin(row, label, from_us)) EndOpen(row, to_us);
}

void Timeline::WriteNegotiation(Row* row, int64_t deciding_round_us, int64_t end_us) {
  row->negotiating = false;
  int64_t from = std::max(row->negotiate_start_us, row->last_us);
  if (deciding_round_us > row->taken_round_us && deciding_round_us > from) {
    PushPhase(row, kWaitingPhase, from, deciding_round_us);
    from = deciding_round_us;
  }
  PushPhase(row, kNegotiatePhase, from, end_us);
}

void Timeline::ClosePhase(Row* row) {
  // A negotiation cut short (Stop, or a new operation on a name whose last one failed):
  // how much of it was waiting is unknown, so it is all NEGOTIATE.
  if (row->negotiating) WriteNegotiation(row, row->taken_round_us, NowMicros());
  if (!row->phase_open) return;
  EndOpen(row, NowMicros());
  row->phase_open = false;
}

void Timeline::NegotiateStart(const std::string& name, OpType op, Clock::time_point submitted,
                              Clock::time_point round_started) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active()) return;
  Row* row = FindOrAddRow(name);
  if (row == nullptr) return;
  // A name whose last operation never ended (it failed before End): close it first.
  ClosePhase(row);
  if (row->operation_open) EndOpen(row, NowMicros());
  row->operation_open = TryBegin(row, OperationLabel(op), MicrosAt(submitted));
  row->negotiating = row->operation_open;
  row->negotiate_start_us = row->last_us;
  row->taken_round_us = MicrosAt(round_started);
}

void Timeline::NegotiateEnd(const std::string& name, Clock::time_point deciding_round_started) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active()) return;
  auto found = rows_.find(name);
  if (found == rows_.end() || !found->second.negotiating) return;
  WriteNegotiation(&found->second, MicrosAt(deciding_round_started), NowMicros());
}

// Opens phase `label` on `name`'s open operation, closing the phase before it.
void Timeline::StartPhase(const std::string& name, std::string_view label) {
  auto found = rows_.find(name);
  if (found == rows_.end() || !found->second.operation_open) return;  // began before Start()
  Row& row = found->second;
  ClosePhase(&row);
  row.phase_open = TryBegin(&row, std::string(label), NowMicros());
}

void Timeline::ActivityStart(const std::vector<std::string>& names, std::string_view activity) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active()) return;
  for (const std::string& name : names) StartPhase(name, activity);
}

void Timeline::ActivityEnd(const std::vector<std::string>& names) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active()) return;
  for (const std::string& name : names) {
    auto found = rows_.find(name);
    if (found != rows_.end()) ClosePhase(&found->second);
  }
}

void Timeline::End(const std::string& name) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active()) return;
  auto found = rows_.find(name);
  if (found == rows_.end() || !found->second.operation_open) return;
  Row& row = found->second;
  ClosePhase(&row);
  EndOpen(&row, NowMicros());
  row.operation_open = false;
}

void Timeline::MarkCycle() {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active() || !mark_cycles_) return;
  TryPushWithRoom({TimelineEvent::Kind::kInstant, 0, NowMicros(), kCycleMarker}, 0);
}

void Timeline::Note(std::string_view label, std::string args_json) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active()) return;
  TimelineEvent event{TimelineEvent::Kind::kInstant, 0, NowMicros(), std::string(label)};
  event.args_json = std::move(args_json);
  TryPushWithRoom(std::move(event), 0);
}

void Timeline::FrameworkWaitStart() {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active() || ++framework_waits_ > 1) return;
  Row* row = FindOrAddRow(kFrameworkWaitRow);
  if (row != nullptr && !row->operation_open) {
    row->operation_open = TryBegin(row, kFrameworkWaitEvent, NowMicros());
  }
}

void Timeline::FrameworkWaitEnd() {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // A wait that began before Start() was not counted.
  if (!active() || framework_waits_ == 0 || --framework_waits_ > 0) return;
  auto found = rows_.find(kFrameworkWaitRow);
  if (found == rows_.end() || !found->second.operation_open) return;
  EndOpen(&found->second, NowMicros());
  found->second.operation_open = false;
}

}  // namespace horde
