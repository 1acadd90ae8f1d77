#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/op_type.h"
#include "core/timeline_writer.h"
#include "horde/status.h"

namespace horde {

// Records what each tensor's operation went through, as a Chrome trace (JSON array form)
// that Perfetto (ui.perfetto.dev) and chrome://tracing open, and that
// `python -m horde.timeline summary FILE` summarizes. One row per tensor name; on it,
// one outer event per operation (e.g. "ALLREDUCE") containing its phases in order:
//
//   NegotiateStart(name, op, submitted, round)   opens the operation at its submission
//   NegotiateEnd(name, round)    writes its negotiation as WAITING_FOR_RANKS (rounds that
//                                passed without deciding it: some rank had not submitted
//                                it) and NEGOTIATE (the protocol: the deciding round)
//   ActivityStart(names, "QUEUE")                     waiting for its turn to run
//   ActivityStart(names, "MEMCPY_IN_FUSION_BUFFER")   (each start closes the phase before)
//   ActivityStart(names, "MPI_ALLREDUCE")             the collective
//   ActivityStart(names, "MEMCPY_OUT_FUSION_BUFFER")
//   ActivityEnd(names)           closes the open phase (optional before End)
//   End(name)                    closes the open phase and the operation
//
// A fused response passes all its tensor names to one ActivityStart. MarkCycle() (when
// started with mark_cycles) puts a global instant event CYCLE_START on the trace, once
// per background-loop round; Note(label, args) a global instant with JSON arguments
// (the straggler report). Timestamps are microseconds since Start(); on a row they never
// go back (an event stamped before the row's last one is moved up to it).
//
// Wiring (the runtime): NegotiateStart when the loop takes a request, with its submission
// time and the start of that round; NegotiateEnd when its response is decided, with the
// start of the deciding round; the ActivityStart/End calls around execution (QUEUE from
// the decision to the start of its execution), End when its callback fires; MarkCycle
// at the start of every round. Recorders are meant to be called unconditionally: while
// inactive they cost one atomic load and allocate nothing. An operation already in
// flight when Start() is called is not recorded (its later events are ignored);
// operations still open at Stop() are closed there (a negotiation in progress as
// NEGOTIATE), so the file always nests.
//
// Thread-safe: any thread may record; any thread may Start/Stop. File I/O happens only
// on the writer thread (TimelineWriter). Memory is bounded: at most `queue_capacity`
// events wait for the writer, and at most `max_rows` tensor names get a row. When the
// queue is full, new operations and phases are dropped and counted (never blocking the
// caller); an accepted event's closing event always has room, so what is written nests.
// The count is written at Stop() as an instant event DROPPED_EVENTS {"count": N}.
// In a timeline's path (HORDE_TIMELINE, start_timeline): every rank writes its own file,
// with its rank in place of this; a path without it is written by rank 0 alone.
constexpr const char* kTimelineRankPlaceholder = "{rank}";

// The row of FRAMEWORK_WAIT events (Timeline::FrameworkWaitStart).
constexpr const char* kFrameworkWaitRow = "framework blocked on horde";

class Timeline {
 public:
  static constexpr size_t kDefaultQueueCapacity = 1 << 16;
  static constexpr size_t kDefaultMaxRows = 1 << 16;
  static constexpr size_t kMaxWakeBatch = 4096;

  explicit Timeline(size_t queue_capacity = kDefaultQueueCapacity,
                    size_t max_rows = kDefaultMaxRows);
  ~Timeline();  // Stops (and closes the file) if started.
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Opens `path` (truncating it) and starts recording. While started, it finishes the
  // current file first (as Stop) and switches to `path`. An error names the path and why
  // it could not be opened; the timeline is then stopped.
  Status Start(const std::string& path, bool mark_cycles);
  // Closes open events, flushes everything queued, writes the drop count and the closing
  // bracket, and joins the writer thread. An error names the file and the failed write.
  // No-op when not started.
  Status Stop();
  bool active() const { return active_.load(std::memory_order_acquire); }

  using Clock = std::chrono::steady_clock;

  void NegotiateStart(const std::string& name, OpType op, Clock::time_point submitted,
                      Clock::time_point round_started);
  void NegotiateEnd(const std::string& name, Clock::time_point deciding_round_started);
  // A string_view, so that naming a phase allocates nothing while the timeline is off.
  void ActivityStart(const std::vector<std::string>& names, std::string_view activity);
  void ActivityEnd(const std::vector<std::string>& names);
  void End(const std::string& name);
  void MarkCycle();
  // `args_json`: a JSON object, written as the event's "args".
  void Note(std::string_view label, std::string args_json);
  // A framework thread blocks on horde (waits for an operation, or for the optimizer's
  // gradients) from Start to End. The row kFrameworkWaitRow holds a FRAMEWORK_WAIT event
  // while at least one thread is blocked: the summary counts horde's phases against the
  // step only then, and the rest of the time as the framework's own work.
  void FrameworkWaitStart();
  void FrameworkWaitEnd();

  // Events dropped since the last Start() because the queue was full or the row limit
  // was reached.
  int64_t dropped_events() const;

 private:
  // A tensor name's row and what is open on it now.
  struct Row {
    int32_t tid = 0;
    bool operation_open = false;
    bool phase_open = false;
    // Between NegotiateStart and NegotiateEnd: the negotiation's phases are written at
    // its end, when it is known how much of it was waiting for other ranks.
    bool negotiating = false;
    int64_t negotiate_start_us = 0;
    int64_t taken_round_us = 0;
    int64_t last_us = 0;  // the latest timestamp written on the row
  };

  int64_t NowMicros() const;
  int64_t MicrosAt(Clock::time_point time) const;
  // Finds or creates `name`'s row; null (and counts a drop) when the row limit is reached
  // or there is no room for the row's name. Needs mutex_.
  Row* FindOrAddRow(const std::string& name);
  // Queues `event` if the queue has room for it, for the closing events of everything
  // open and for `closing_events` more; otherwise counts a drop. Needs mutex_.
  bool TryPushWithRoom(TimelineEvent event, size_t closing_events);
  // Queues an event that opens something at `ts_us` (no earlier than the row's last
  // event), keeping room for its closing event.
  bool TryBegin(Row* row, std::string label, int64_t ts_us);
  // Queues the closing event of something opened by TryBegin (its room was kept).
  void EndOpen(Row* row, int64_t ts_us);
  // Queues `label` from `from_us` to `to_us` as one phase, or drops it.
  void PushPhase(Row* row, const char* label, int64_t from_us, int64_t to_us);
  // Writes the negotiation's phases: WAITING_FOR_RANKS up to the deciding round's start
  // when that round came after the one that took the request, NEGOTIATE from there.
  void WriteNegotiation(Row* row, int64_t deciding_round_us, int64_t end_us);
  void ClosePhase(Row* row);
  void StartPhase(const std::string& name, std::string_view label);
  // Stops recording, closes every open event and queues the drop count; returns the
  // writer (null when not started) for CloseWriter.
  std::unique_ptr<TimelineWriter> DetachWriter();
  static Status CloseWriter(std::unique_ptr<TimelineWriter> writer);

  const size_t queue_capacity_;
  const size_t max_rows_;
  std::atomic<bool> active_{false};
  // Serializes Start/Stop; recorders take only mutex_.
  std::mutex control_mutex_;
  mutable std::mutex mutex_;
  std::unique_ptr<TimelineWriter> writer_;
  bool mark_cycles_ = false;
  Clock::time_point start_time_;
  std::unordered_map<std::string, Row> rows_;
  int framework_waits_ = 0;  // threads blocked on horde now, counted while active
  // Opened events whose closing event is not queued yet: their room in the queue.
  size_t open_events_ = 0;
  int64_t dropped_ = 0;
};

// Marks the calling thread blocked on horde for the scope's lifetime; a null timeline
// (horde not running) records nothing.
class FrameworkWaitScope {
 public:
  explicit FrameworkWaitScope(std::shared_ptr<Timeline> timeline) : timeline_(std::move(timeline)) {
    if (timeline_) timeline_->FrameworkWaitStart();
  }
  ~FrameworkWaitScope() {
    if (timeline_) timeline_->FrameworkWaitEnd();
  }
  FrameworkWaitScope(const FrameworkWaitScope&) = delete;
  FrameworkWaitScope& operator=(const FrameworkWaitScope&) = delete;

 private:
  std::shared_ptr<Timeline> timeline_;
};

}  // namespace horde
