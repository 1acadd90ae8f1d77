#include "core/wire_codec.h"

#include <cstring>
#include <type_traits>

namespace horde {
namespace {

constexpr uint8_t kRequestListMagic = 0xA1;
constexpr uint8_t kResponseListMagic = 0xB1;
// The fewest bytes one encoded item can take (all strings and lists empty), which
// bounds how many items a count may claim before anything is allocated.
constexpr size_t kMinRequestBytes = 4 + 4 + 1 + 1 + 4 + 1 + 8 + 8 + 4 + 4 + 4 + 4 + 4;
constexpr size_t kMinResponseBytes = 1 + 1 + 4 + 4 + 1 + 1 + 8 + 8 + 4 + 4 + 4 + 4;

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
  void PutInts(const std::vector<int64_t>& v) {
    Put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) Put<int64_t>(x);
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
  bool GetInts(std::vector<int64_t>* v, uint32_t max_count) {
    uint32_t n = 0;
    if (!GetCount(&n, sizeof(int64_t))) return false;
    if (n > max_count) return Fail("too many values: " + std::to_string(n));
    v->resize(n);
    for (auto& x : *v) Get(&x);
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

void EncodeRequest(const Request& r, ByteWriter* w) {
  w->Put<int32_t>(r.rank);
  w->PutString(r.name);
  w->Put<uint8_t>(static_cast<uint8_t>(r.op));
  w->Put<uint8_t>(static_cast<uint8_t>(r.dtype));
  w->PutInts(r.shape);
  w->Put<uint8_t>(static_cast<uint8_t>(r.reduce_op));
  w->Put<double>(r.prescale);
  w->Put<double>(r.postscale);
  w->Put<int32_t>(r.root);
  w->Put<int32_t>(r.device);
  w->PutString(r.group);
  w->Put<int32_t>(r.group_size);
  w->Put<int32_t>(r.numbering_epoch);
}

bool DecodeRequest(ByteReader* r, Request* q) {
  if (!(r->Get(&q->rank) && r->GetString(&q->name) && r->GetEnum(&q->op, kNumOpTypes) &&
        r->GetEnum(&q->dtype, kNumDataTypes) && r->GetInts(&q->shape, kMaxTensorDims) &&
        r->GetEnum(&q->reduce_op, kNumReduceOps) && r->Get(&q->prescale) &&
        r->Get(&q->postscale) && r->Get(&q->root) && r->Get(&q->device) &&
        r->GetString(&q->group) && r->Get(&q->group_size) && r->Get(&q->numbering_epoch))) {
    return false;
  }
  for (int64_t d : q->shape) {
    if (d < 0) return r->Fail("negative dimension in shape of '" + q->name + "'");
  }
  return true;
}

void EncodeResponse(const Response& p, ByteWriter* w) {
  w->Put<uint8_t>(static_cast<uint8_t>(p.kind));
  w->Put<uint8_t>(static_cast<uint8_t>(p.op));
  w->Put<uint32_t>(static_cast<uint32_t>(p.names.size()));
  for (const auto& n : p.names) w->PutString(n);
  w->PutString(p.error_message);
  w->Put<uint8_t>(static_cast<uint8_t>(p.dtype));
  w->Put<uint8_t>(static_cast<uint8_t>(p.reduce_op));
  w->Put<double>(p.prescale);
  w->Put<double>(p.postscale);
  w->Put<int32_t>(p.root);
  w->Put<int32_t>(p.device);
  w->PutInts(p.first_dims);
  w->PutInts(p.tensor_sizes);
}

bool DecodeResponse(ByteReader* r, Response* p) {
  uint32_t num_names;
  if (!(r->GetEnum(&p->kind, 2) && r->GetEnum(&p->op, kNumOpTypes) &&
        r->GetCount(&num_names, sizeof(uint32_t)))) {
    return false;
  }
  p->names.resize(num_names);
  for (auto& n : p->names) {
    if (!r->GetString(&n)) return false;
  }
  return r->GetString(&p->error_message) && r->GetEnum(&p->dtype, kNumDataTypes) &&
         r->GetEnum(&p->reduce_op, kNumReduceOps) && r->Get(&p->prescale) &&
         r->Get(&p->postscale) && r->Get(&p->root) && r->Get(&p->device) &&
         r->GetInts(&p->first_dims, UINT32_MAX) && r->GetInts(&p->tensor_sizes, UINT32_MAX);
}

}  // namespace

std::string EncodeRequestList(const RequestList& list) {
  ByteWriter w;
  w.Put<uint8_t>(kRequestListMagic);
  w.Put<uint8_t>(list.shutdown ? 1 : 0);
  w.PutString(list.failure);
  w.Put<int32_t>(list.numbering_epoch);
  w.Put<uint32_t>(static_cast<uint32_t>(list.requests.size()));
  for (const auto& r : list.requests) EncodeRequest(r, &w);
  return w.Take();
}

Status DecodeRequestList(const std::string& bytes, RequestList* list) {
  ByteReader r(bytes);
  *list = RequestList();
  uint32_t n = 0;
  if (r.ExpectMagic(kRequestListMagic) && r.GetBool(&list->shutdown) &&
      r.GetString(&list->failure) && r.Get(&list->numbering_epoch) &&
      r.GetCount(&n, kMinRequestBytes)) {
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
  for (const auto& p : list.responses) EncodeResponse(p, &w);
  return w.Take();
}

Status DecodeResponseList(const std::string& bytes, ResponseList* list) {
  ByteReader r(bytes);
  *list = ResponseList();
  uint32_t n = 0;
  if (r.ExpectMagic(kResponseListMagic) && r.GetBool(&list->shutdown) &&
      r.GetString(&list->shutdown_reason) && r.GetCount(&n, kMinResponseBytes)) {
    list->responses.resize(n);
    for (auto& p : list->responses) {
      if (!DecodeResponse(&r, &p)) break;
    }
  }
  return r.Finish("response list");
}

}  // namespace horde
