#include "core/wire_codec.h"

#include <cstring>
#include <type_traits>

#include "core/message_fields.h"

namespace horde {
namespace {

constexpr uint8_t kRequestListMagic = 0xA1;
constexpr uint8_t kResponseListMagic = 0xB1;

// How many values each enum on the wire has.
constexpr int ValueCount(OpType) { return kNumOpTypes; }
constexpr int ValueCount(DataType) { return kNumDataTypes; }
constexpr int ValueCount(ReduceOp) { return kNumReduceOps; }
constexpr int ValueCount(Response::Kind) { return Response::kNumKinds; }

class ByteWriter {
 public:
  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    out_.append(raw, sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  template <typename Ints>  // std::vector<int64_t> or TensorShape
  void PutInts(const Ints& v) {
    Put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) Put<int64_t>(x);
  }
  // One field of a message, as FieldList lists it.
  template <typename T>
  void PutField(const T& value) {
    if constexpr (std::is_enum<T>::value) {
      static_assert(sizeof(T) == 1, "enums travel as one byte");
      Put<uint8_t>(static_cast<uint8_t>(value));
    } else if constexpr (std::is_same<T, bool>::value) {
      Put<uint8_t>(value ? 1 : 0);
    } else {
      Put<T>(value);
    }
  }
  void PutField(const std::string& s) { PutString(s); }
  void PutField(const std::vector<int64_t>& v) { PutInts(v); }
  void PutField(const TensorShape& v) { PutInts(v); }
  void PutField(const std::vector<std::string>& v) {
    Put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (const auto& s : v) PutString(s);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : in_(in) {}

  template <typename T>
  bool Get(T* value) {
    if (remaining() < sizeof(T)) return Fail("truncated");
    std::memcpy(value, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  template <typename Enum>
  bool GetEnum(Enum* value, int count) {
    uint8_t raw = 0;
    if (!Get(&raw)) return false;
    if (raw >= count) return Fail("enum value " + std::to_string(raw) + " out of range");
    *value = static_cast<Enum>(raw);
    return true;
  }
  bool GetBool(bool* value) {
    uint8_t raw = 0;
    if (!Get(&raw)) return false;
    if (raw > 1) return Fail("boolean byte " + std::to_string(raw));
    *value = raw == 1;
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n = 0;
    if (!Get(&n)) return false;
    if (n > remaining()) return Fail("string length " + std::to_string(n) + " exceeds input");
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  // A count of items each at least `min_item_bytes` long: bounded by what remains.
  bool GetCount(uint32_t* n, size_t min_item_bytes) {
    if (!Get(n)) return false;
    if (static_cast<uint64_t>(*n) * min_item_bytes > remaining()) {
      return Fail("count " + std::to_string(*n) + " exceeds input");
    }
    return true;
  }
  template <typename Ints>  // std::vector<int64_t> or TensorShape
  bool GetInts(Ints* v, uint32_t max_count) {
    uint32_t n = 0;
    if (!GetCount(&n, sizeof(int64_t))) return false;
    if (n > max_count) return Fail("too many values: " + std::to_string(n));
    v->resize(n);
    for (auto& x : *v) Get(&x);
    return true;
  }
  template <typename T>
  bool GetField(T* value) {
    if constexpr (std::is_enum<T>::value) {
      return GetEnum(value, ValueCount(T{}));
    } else if constexpr (std::is_same<T, bool>::value) {
      return GetBool(value);
    } else {
      return Get(value);
    }
  }
  bool GetField(std::string* s) { return GetString(s); }
  bool GetField(std::vector<int64_t>* v) { return GetInts(v, UINT32_MAX); }
  bool GetField(TensorShape* v) { return GetInts(v, UINT32_MAX); }
  bool GetField(std::vector<std::string>* v) {
    uint32_t n = 0;
    if (!GetCount(&n, sizeof(uint32_t))) return false;
    v->resize(n);
    for (auto& s : *v) {
      if (!GetString(&s)) return false;
    }
    return true;
  }
  bool ExpectMagic(uint8_t magic) {
    uint8_t got = 0;
    if (!Get(&got)) return false;
    return got == magic || Fail("bad magic byte");
  }
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at byte " + std::to_string(pos_);
    return false;
  }
  Status Finish(const char* what) {
    if (error_.empty() && remaining() != 0) Fail(std::to_string(remaining()) + " trailing bytes");
    if (error_.empty()) return Status::Ok();
    return Status::Internal(std::string("malformed ") + what + ": " + error_);
  }

 private:
  size_t remaining() const { return in_.size() - pos_; }

  const std::string& in_;
  size_t pos_ = 0;
  std::string error_;
};

template <class Message>
void EncodeMessage(const Message& m, ByteWriter* w) {
  FieldList<Message>::ForEach([&](auto field) {
    if constexpr ((decltype(field)::roles & kWire) != 0) w->PutField(m.*field.member);
  });
}

template <class Message>
bool DecodeMessage(ByteReader* r, Message* m) {
  bool ok = true;
  FieldList<Message>::ForEach([&](auto field) {
    if constexpr ((decltype(field)::roles & kWire) != 0) {
      ok = ok && r->GetField(&(m->*field.member));
    }
  });
  return ok;
}

// The fewest bytes one encoded message can take (all strings and lists empty), which
// bounds how many a count may claim before anything is allocated.
template <class Message>
constexpr size_t MinWireBytes() {
  size_t bytes = 0;
  FieldList<Message>::ForEach([&bytes](auto field) {
    using T = typename decltype(field)::Type;
    if constexpr ((decltype(field)::roles & kWire) == 0) {
      return;
    } else if constexpr (std::is_arithmetic<T>::value || std::is_enum<T>::value) {
      bytes += sizeof(T);
    } else {
      bytes += sizeof(uint32_t);  // a string's or a list's length
    }
  });
  return bytes;
}

bool DecodeRequest(ByteReader* r, Request* q) {
  if (!DecodeMessage(r, q)) return false;
  if (q->shape.size() > kMaxTensorDims) {
    return r->Fail("shape of '" + q->name + "' has " + std::to_string(q->shape.size()) +
                   " dimensions; at most " + std::to_string(kMaxTensorDims) + " are allowed");
  }
  if (q->waited_microseconds < 0) return r->Fail("negative waiting time of '" + q->name + "'");
  for (int64_t d : q->shape) {
    if (d < 0) return r->Fail("negative dimension in shape of '" + q->name + "'");
  }
  return true;
}

}  // namespace

std::string EncodeRequestList(const RequestList& list) {
  ByteWriter w;
  w.Put<uint8_t>(kRequestListMagic);
  w.Put<uint8_t>(list.shutdown ? 1 : 0);
  w.PutString(list.failure);
  w.Put<int32_t>(list.numbering_epoch);
  w.Put<uint32_t>(static_cast<uint32_t>(list.requests.size()));
  for (const auto& r : list.requests) EncodeMessage(r, &w);
  return w.Take();
}

Status DecodeRequestList(const std::string& bytes, RequestList* list) {
  ByteReader r(bytes);
  *list = RequestList();
  uint32_t n = 0;
  if (r.ExpectMagic(kRequestListMagic) && r.GetBool(&list->shutdown) &&
      r.GetString(&list->failure) && r.Get(&list->numbering_epoch) &&
      r.GetCount(&n, MinWireBytes<Request>())) {
    list->requests.resize(n);
    for (auto& q : list->requests) {
      if (!DecodeRequest(&r, &q)) break;
    }
  }
  return r.Finish("request list");
}

std::string EncodeResponseList(const ResponseList& list) {
  ByteWriter w;
  w.Put<uint8_t>(kResponseListMagic);
  w.Put<uint8_t>(list.shutdown ? 1 : 0);
  w.PutString(list.shutdown_reason);
  w.Put<uint32_t>(static_cast<uint32_t>(list.responses.size()));
  for (const auto& p : list.responses) EncodeMessage(p, &w);
  return w.Take();
}

Status DecodeResponseList(const std::string& bytes, ResponseList* list) {
  ByteReader r(bytes);
  *list = ResponseList();
  uint32_t n = 0;
  if (r.ExpectMagic(kResponseListMagic) && r.GetBool(&list->shutdown) &&
      r.GetString(&list->shutdown_reason) && r.GetCount(&n, MinWireBytes<Response>())) {
    list->responses.resize(n);
    for (auto& p : list->responses) {
      if (!DecodeMessage(&r, &p)) break;
    }
  }
  return r.Finish("response list");
}

}  // namespace horde
