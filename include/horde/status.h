#pragma once

#include <string>
#include <utility>

namespace horde {

enum class StatusCode {
  kOk,
  kInvalidArgument,    // the caller passed something wrong (local misuse)
  kPreconditionError,  // ranks disagree, or the runtime is in the wrong state
  kAborted,            // the runtime shut down before the operation ran
  kInternal,           // a transport or collective failed
  kUnimplemented,      // valid, but not supported (Horovod's NotImplementedError)
};

// The result of an operation: a code and a human-readable message naming what went
// wrong and what was expected. Cheap to copy; Ok() carries no message.
class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status PreconditionError(std::string msg) {
    return {StatusCode::kPreconditionError, std::move(msg)};
  }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status Unimplemented(std::string msg) {
    return {StatusCode::kUnimplemented, std::move(msg)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Whether every rank of the process set fails this operation alike, with this
  // message: the coordinator decided it (ranks disagree, a stall, an operation that
  // failed elsewhere before this rank submitted it). A rank that sees such a failure
  // needs no word from the others to know that theirs failed too.
  bool agreed() const { return agreed_; }
  Status Agreed() const {
    Status s = *this;
    s.agreed_ = !s.ok();
    return s;
  }

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  bool agreed_ = false;
};

#define HORDE_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::horde::Status _horde_status = (expr);        \
    if (!_horde_status.ok()) return _horde_status; \
  } while (0)

}  // namespace horde
