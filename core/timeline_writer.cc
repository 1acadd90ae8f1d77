#include "core/timeline_writer.h"

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "core/logging.h"

namespace horde {
namespace {

// Every event is on process 1; pid 0 reads as the idle task in some viewers.
constexpr const char* kPid = "1";

// Appends `"ph":"X","ts":T,"pid":1,"tid":N` (ts only when the event has one).
void AppendPlace(const char* phase, const TimelineEvent& event, bool with_ts, std::string* out) {
  out->append("\"ph\":\"").append(phase).append("\",");
  if (with_ts) out->append("\"ts\":").append(std::to_string(event.ts_us)).append(",");
  out->append("\"pid\":").append(kPid).append(",\"tid\":").append(std::to_string(event.tid));
}

void AppendRowName(const TimelineEvent& event, std::string* out) {
  out->append(",\n{\"name\":\"thread_name\",");
  AppendPlace("M", event, false, out);
  out->append(",\"args\":{\"name\":");
  AppendJsonString(event.label, out);
  out->append("}},\n{\"name\":\"thread_sort_index\",");
  AppendPlace("M", event, false, out);
  out->append(",\"args\":{\"sort_index\":").append(std::to_string(event.tid)).append("}}");
}

}  // namespace

void AppendJsonString(const std::string& text, std::string* out) {
  out->push_back('"');
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out->append(escaped);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

void AppendTimelineEventJson(const TimelineEvent& event, std::string* out) {
  switch (event.kind) {
    case TimelineEvent::Kind::kBegin:
      out->append(",\n{\"name\":");
      AppendJsonString(event.label, out);
      out->append(",");
      AppendPlace("B", event, true, out);
      out->append("}");
      return;
    case TimelineEvent::Kind::kEnd:
      out->append(",\n{");
      AppendPlace("E", event, true, out);
      out->append("}");
      return;
    case TimelineEvent::Kind::kInstant:
      out->append(",\n{\"name\":");
      AppendJsonString(event.label, out);
      out->append(",\"s\":\"g\",");
      AppendPlace("i", event, true, out);
      if (!event.args_json.empty()) {
        out->append(",\"args\":").append(event.args_json);
      } else if (event.count >= 0) {
        out->append(",\"args\":{\"count\":").append(std::to_string(event.count)).append("}");
      }
      out->append("}");
      return;
    case TimelineEvent::Kind::kRowName: AppendRowName(event, out); return;
  }
}

Status TimelineWriter::Open(const std::string& path, size_t wake_batch,
                            std::unique_ptr<TimelineWriter>* writer) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return Status::InvalidArgument(
        "timeline: cannot open '" + path + "' for writing: " + std::strerror(errno) +
        " (expected a writable file path, e.g. HORDE_TIMELINE=/tmp/timeline.json)");
  }
  writer->reset(new TimelineWriter(path, file, wake_batch));
  (*writer)->WriteText(
      "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"horde\"}}");
  std::fflush(file);
  (*writer)->thread_ = std::thread(&TimelineWriter::Run, writer->get());
  return Status::Ok();
}

TimelineWriter::TimelineWriter(std::string path, std::FILE* file, size_t wake_batch)
    : path_(std::move(path)), file_(file), wake_batch_(wake_batch) {}

TimelineWriter::~TimelineWriter() { Close(); }

bool TimelineWriter::TryPush(TimelineEvent event, size_t max_queued) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (queue_.size() >= max_queued) return false;
  queue_.push_back(std::move(event));
  // Waking the writer costs a system call: only once per batch, not per event.
  if (queue_.size() == wake_batch_) wake_.notify_one();
  return true;
}

void TimelineWriter::Push(TimelineEvent event) {
  TryPush(std::move(event), std::numeric_limits<size_t>::max());
}

Status TimelineWriter::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return write_error_;
    closing_ = true;
  }
  wake_.notify_one();
  thread_.join();
  WriteText("\n]\n");
  if (std::fclose(file_) != 0 && write_error_.ok()) {
    write_error_ = Status::Internal("timeline: closing '" + path_ +
                                    "' failed: " + std::strerror(errno));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  return write_error_;
}

void TimelineWriter::Run() {
  std::vector<TimelineEvent> batch;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait_for(lock, kFlushInterval,
                   [this] { return closing_ || queue_.size() >= wake_batch_; });
    const bool last = closing_;
    batch.swap(queue_);
    lock.unlock();
    Write(batch);
    batch.clear();
    lock.lock();
    if (last && queue_.empty()) return;
  }
}

void TimelineWriter::Write(const std::vector<TimelineEvent>& batch) {
  if (batch.empty()) return;
  std::string text;
  for (const TimelineEvent& event : batch) AppendTimelineEventJson(event, &text);
  WriteText(text);
  if (std::fflush(file_) != 0 && write_error_.ok()) {
    write_error_ = Status::Internal("timeline: writing '" + path_ +
                                    "' failed: " + std::strerror(errno));
    HORDE_LOG(kWarning) << write_error_.message();
  }
}

void TimelineWriter::WriteText(const std::string& text) {
  if (!write_error_.ok()) return;  // the file is already incomplete; keep draining
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
    write_error_ = Status::Internal("timeline: writing '" + path_ +
                                    "' failed: " + std::strerror(errno));
    HORDE_LOG(kWarning) << write_error_.message();
  }
}

}  // namespace horde
