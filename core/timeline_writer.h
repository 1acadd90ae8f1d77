#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "horde/status.h"

namespace horde {

// One trace event as the Timeline queues it; the writer thread formats it.
struct TimelineEvent {
  enum class Kind : uint8_t {
    kBegin,    // opens `label` on row `tid`
    kEnd,      // closes the innermost open event on row `tid`
    kInstant,  // a global marker named `label`, with args `args_json` when not empty, or
               // {"count": count} when count >= 0
    kRowName,  // names row `tid` after the tensor `label` and sorts rows by tid
  };
  Kind kind = Kind::kBegin;
  int32_t tid = 0;
  int64_t ts_us = 0;
  std::string label;
  int64_t count = -1;
  std::string args_json = {};  // a JSON object
};

// Owns a timeline file and the thread that writes it, so that recording never waits
// for the disk. Events are written as one JSON array ("[" then one event per line); the
// closing "]" comes at Close(), and a file cut short by a crash still opens in Perfetto,
// which tolerates its absence. The writer wakes every kFlushInterval, or sooner when
// `wake_batch` events are waiting, and flushes the file after each batch.
//
// The caller bounds the queue (TryPush); the batch being written is at most one queue's
// worth.
class TimelineWriter {
 public:
  static constexpr std::chrono::milliseconds kFlushInterval{200};

  // Creates (truncates) `path`, writes the opening of the array, starts the thread.
  static Status Open(const std::string& path, size_t wake_batch,
                     std::unique_ptr<TimelineWriter>* writer);
  ~TimelineWriter();  // Close()s if not closed.
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  // Queues `event` unless `max_queued` events already wait for the writer thread.
  bool TryPush(TimelineEvent event, size_t max_queued);
  // Queues `event` whatever the queue holds (a closing event whose room was kept).
  void Push(TimelineEvent event);
  // Writes everything pushed, closes the array and the file, joins the thread. Returns
  // the first write error, naming the file. Idempotent.
  Status Close();

 private:
  TimelineWriter(std::string path, std::FILE* file, size_t wake_batch);
  void Run();
  void Write(const std::vector<TimelineEvent>& batch);
  void WriteText(const std::string& text);

  const std::string path_;
  std::FILE* file_;
  const size_t wake_batch_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<TimelineEvent> queue_;
  bool closing_ = false;
  bool closed_ = false;
  // Touched only by the writer thread until it is joined.
  Status write_error_;
  std::thread thread_;
};

// Appends `text` as a JSON string (quoted, escaped).
void AppendJsonString(const std::string& text, std::string* out);

// Appends `event` as JSON object(s), each on its own line preceded by ",\n".
void AppendTimelineEventJson(const TimelineEvent& event, std::string* out);

}  // namespace horde
