#include "core/wire_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/message_fields.h"
#include "tests/cpp/allocation_probe.h"

namespace horde {
namespace {

// One request per (op, dtype, reduce op) combination, every other field varied too.
RequestList EveryKindOfRequest() {
  const std::vector<TensorShape> shapes = {{}, {0}, {7}, {2, 3}, {1, 4, 1, 5}, {1LL << 40, 2}};
  const std::vector<std::string> names = {"grad.fc1.weight", "", "層/バイアス ✓",
                                          std::string("nul\0inside", 10)};
  RequestList list;
  list.shutdown = true;
  list.failure = "RuntimeError: boom ✗";
  list.numbering_epoch = 7;
  int i = 0;
  for (int op = 0; op < kNumOpTypes; ++op) {
    for (int dtype = 0; dtype < kNumDataTypes; ++dtype) {
      for (int reduce = 0; reduce < kNumReduceOps; ++reduce, ++i) {
        Request r;
        r.rank = 1000 + i;
        r.name = names[i % names.size()] + std::to_string(i);
        r.op = static_cast<OpType>(op);
        r.dtype = static_cast<DataType>(dtype);
        r.shape = shapes[i % shapes.size()];
        r.reduce_op = static_cast<ReduceOp>(reduce);
        r.prescale = 0.25 + i;
        r.postscale = -1.0 / (i + 3);
        r.root = i % 7;
        r.device = i % 3 - 1;  // cpu, cuda:0 and cuda:1
        if (i % 5 == 0) r.group = "g" + std::to_string(i);
        r.group_size = i % 5 == 0 ? 3 : 0;
        r.numbering_epoch = i % 4 - 1;  // named (-1) and numbered in epochs 0-2
        r.waited_microseconds = i % 2 == 0 ? 0 : (int64_t{1} << 40) + i;
        // Unknown, relative, and absolute with any bytes a file name may have.
        if (i % 3 == 1) r.call_site = "train.py:" + std::to_string(i);
        if (i % 3 == 2) r.call_site = "/home/ü/日本/a b.py:" + std::to_string(i);
        list.requests.push_back(r);
      }
    }
  }
  return list;
}

ResponseList EveryKindOfResponse() {
  ResponseList list;
  list.shutdown = true;
  list.shutdown_reason = "rank 1 failed: RuntimeError: boom ✗";
  int i = 0;
  for (int op = 0; op < kNumOpTypes; ++op) {
    for (int dtype = 0; dtype < kNumDataTypes; ++dtype) {
      for (int reduce = 0; reduce < kNumReduceOps; ++reduce, ++i) {
        Response r;
        r.kind = i % 4 == 0 ? Response::Kind::kError : Response::Kind::kCollective;
        r.op = static_cast<OpType>(op);
        for (int n = 0; n <= i % 3; ++n) {
          r.names.push_back("t" + std::to_string(i) + "·" + std::to_string(n));
        }
        if (r.kind == Response::Kind::kError) {
          r.error_message = "ranks disagree: ✗ " + std::to_string(i);
        }
        r.dtype = static_cast<DataType>(dtype);
        r.reduce_op = static_cast<ReduceOp>(reduce);
        r.prescale = 1.5 * i;
        r.postscale = 1.0 / (i + 1);
        r.root = i % 5;
        r.device = i % 2 == 0 ? kCpuDevice : 3;
        if (r.op == OpType::kAllgather) r.first_dims = {0, 1, i, 1LL << 33};
        if (r.op == OpType::kAllreduce) r.tensor_sizes = {i, 4};
        r.with_joined = i % 3 == 0;
        list.responses.push_back(r);
      }
    }
  }
  return list;
}

TEST(WireCodec, RequestListRoundTripsEveryField) {
  const RequestList original = EveryKindOfRequest();
  RequestList decoded;
  Status s = DecodeRequestList(EncodeRequestList(original), &decoded);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(decoded.shutdown);
  EXPECT_EQ(decoded.failure, original.failure);
  EXPECT_EQ(decoded.numbering_epoch, original.numbering_epoch);
  ASSERT_EQ(decoded.requests.size(), original.requests.size());
  for (size_t i = 0; i < original.requests.size(); ++i) {
    EXPECT_TRUE(EqualIn<kWire>(decoded.requests[i], original.requests[i])) << "request " << i;
  }
}

TEST(WireCodec, ResponseListRoundTripsEveryField) {
  const ResponseList original = EveryKindOfResponse();
  ResponseList decoded;
  Status s = DecodeResponseList(EncodeResponseList(original), &decoded);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(decoded.shutdown);
  EXPECT_EQ(decoded.shutdown_reason, original.shutdown_reason);
  ASSERT_EQ(decoded.responses.size(), original.responses.size());
  for (size_t i = 0; i < original.responses.size(); ++i) {
    EXPECT_TRUE(EqualIn<kWire>(decoded.responses[i], original.responses[i])) << "response " << i;
  }
}

TEST(WireCodec, EmptyListsRoundTrip) {
  RequestList requests;
  ASSERT_TRUE(DecodeRequestList(EncodeRequestList(RequestList()), &requests).ok());
  EXPECT_TRUE(requests.requests.empty());
  EXPECT_FALSE(requests.shutdown);
  ResponseList responses;
  ASSERT_TRUE(DecodeResponseList(EncodeResponseList(ResponseList()), &responses).ok());
  EXPECT_TRUE(responses.responses.empty());
  EXPECT_FALSE(responses.shutdown);
}

TEST(WireCodec, EveryTruncationIsRejected) {
  const std::string requests = EncodeRequestList(EveryKindOfRequest());
  for (size_t n = 0; n < requests.size(); ++n) {
    RequestList out;
    Status s = DecodeRequestList(requests.substr(0, n), &out);
    ASSERT_EQ(s.code(), StatusCode::kInternal) << "request prefix of " << n << " bytes";
  }
  const std::string responses = EncodeResponseList(EveryKindOfResponse());
  for (size_t n = 0; n < responses.size(); ++n) {
    ResponseList out;
    Status s = DecodeResponseList(responses.substr(0, n), &out);
    ASSERT_EQ(s.code(), StatusCode::kInternal) << "response prefix of " << n << " bytes";
  }
}

TEST(WireCodec, TrailingBytesAreRejected) {
  RequestList requests;
  Status s = DecodeRequestList(EncodeRequestList(EveryKindOfRequest()) + '\0', &requests);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("1 trailing bytes"), std::string::npos) << s.message();
  ResponseList responses;
  s = DecodeResponseList(EncodeResponseList(EveryKindOfResponse()) + "xy", &responses);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("2 trailing bytes"), std::string::npos) << s.message();
}

TEST(WireCodec, BadMagicIsRejected) {
  std::string bytes = EncodeRequestList(EveryKindOfRequest());
  bytes[0] = static_cast<char>(bytes[0] ^ 0x40);
  RequestList requests;
  Status s = DecodeRequestList(bytes, &requests);
  EXPECT_NE(s.message().find("bad magic"), std::string::npos) << s.message();
  // Each list has its own magic: one kind is never mistaken for the other.
  ResponseList responses;
  EXPECT_FALSE(DecodeResponseList(EncodeRequestList(RequestList()), &responses).ok());
  EXPECT_FALSE(DecodeRequestList(EncodeResponseList(ResponseList()), &requests).ok());
}

// Byte layout of a list holding one request named `name` with a 1-d shape.
// A list starts with its magic byte, the shutdown flag, the (empty) failure text's
// 4-byte length and the 4-byte numbering epoch.
constexpr size_t kCountAt = 10;
constexpr size_t kNameLengthAt = 18;
size_t OpAt(const std::string& name) { return 22 + name.size(); }
size_t ShapeCountAt(const std::string& name) { return OpAt(name) + 2; }
size_t ReduceOpAt(const std::string& name) { return ShapeCountAt(name) + 4 + 8; }

RequestList OneRequest(const std::string& name) {
  Request r;
  r.name = name;
  r.shape = {5};
  RequestList list;
  list.requests.push_back(r);
  return list;
}

// Overwrites the 32-bit field at `offset`, first checking it holds `expected`, so a
// change of the wire layout fails loudly here instead of testing the wrong byte.
void PatchU32(std::string* bytes, size_t offset, uint32_t expected, uint32_t value) {
  uint32_t old = 0;
  std::memcpy(&old, bytes->data() + offset, sizeof(old));
  ASSERT_EQ(old, expected) << "wire layout changed at byte " << offset;
  std::memcpy(&(*bytes)[offset], &value, sizeof(value));
}

TEST(WireCodec, OutOfRangeEnumAndBoolBytesAreRejected) {
  const std::string name = "w";
  const std::string valid = EncodeRequestList(OneRequest(name));
  struct Patch {
    size_t offset;
    uint8_t value;
  };
  for (Patch p : {Patch{1, 2},  // shutdown flag is a bool
                  Patch{OpAt(name), kNumOpTypes}, Patch{OpAt(name) + 1, kNumDataTypes},
                  Patch{ReduceOpAt(name), kNumReduceOps}, Patch{OpAt(name), 0xFF}}) {
    std::string bytes = valid;
    bytes[p.offset] = static_cast<char>(p.value);
    RequestList out;
    Status s = DecodeRequestList(bytes, &out);
    EXPECT_EQ(s.code(), StatusCode::kInternal) << "byte " << p.offset;
    const std::string expected = p.offset == 1
                                     ? "boolean byte 2"
                                     : "enum value " + std::to_string(p.value) + " out of range";
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  }
  // The response kind has two values.
  Response r;
  std::string bytes = EncodeResponseList(ResponseList{{r}, false, ""});
  bytes[10] = 2;  // after magic, shutdown flag, failure text length and count
  ResponseList out;
  EXPECT_NE(DecodeResponseList(bytes, &out).message().find("enum value 2 out of range"),
            std::string::npos);
}

TEST(WireCodec, NegativeDimensionIsRejected) {
  RequestList list = OneRequest("neg");
  list.requests[0].shape = {3, -2};
  RequestList out;
  Status s = DecodeRequestList(EncodeRequestList(list), &out);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("negative dimension in shape of 'neg'"), std::string::npos)
      << s.message();
}

TEST(WireCodec, NegativeWaitingTimeIsRejected) {
  RequestList list = OneRequest("late");
  list.requests[0].waited_microseconds = -1;
  RequestList out;
  Status s = DecodeRequestList(EncodeRequestList(list), &out);
  EXPECT_NE(s.message().find("negative waiting time of 'late'"), std::string::npos) << s.message();
}

TEST(WireCodec, HugeLengthPrefixesAreRejectedWithoutAllocating) {
  constexpr uint32_t kHuge = 0xFFFFFFFF;
  constexpr size_t kSmall = 4096;  // far below what any of the huge prefixes would need
  const std::string name = "grad";
  const std::string valid_request = EncodeRequestList(OneRequest(name));
  // The call site's length is a request's last field.
  const size_t call_site_length_at = valid_request.size() - 4;
  for (auto [offset, old] : {std::pair<size_t, uint32_t>{kCountAt, 1},
                             {kNameLengthAt, static_cast<uint32_t>(name.size())},
                             {ShapeCountAt(name), 1},
                             {call_site_length_at, 0}}) {
    std::string bytes = valid_request;
    PatchU32(&bytes, offset, old, kHuge);
    Status s;
    size_t largest = testing::LargestAllocationDuring([&] {
      RequestList out;
      s = DecodeRequestList(bytes, &out);
    });
    EXPECT_EQ(s.code(), StatusCode::kInternal) << "prefix at byte " << offset;
    EXPECT_NE(s.message().find(std::to_string(kHuge)), std::string::npos) << s.message();
    EXPECT_LT(largest, kSmall) << "prefix at byte " << offset;
  }

  // Response: count, names count, first name's length, and (with no names) the error
  // message length and the first_dims count.
  Response named;
  named.names = {"n"};
  Response bare;
  const std::string with_name = EncodeResponseList(ResponseList{{named}, false, ""});
  const std::string without_name = EncodeResponseList(ResponseList{{bare}, false, ""});
  constexpr size_t kFirstDimsAt = 16 + 4 + 1 + 1 + 8 + 8 + 4 + 4;
  struct Case {
    const std::string* valid;
    size_t offset;
    uint32_t old;
  };
  for (Case c : {Case{&with_name, 6, 1}, Case{&with_name, 12, 1}, Case{&with_name, 16, 1},
                 Case{&without_name, 16, 0}, Case{&without_name, kFirstDimsAt, 0}}) {
    std::string bytes = *c.valid;
    PatchU32(&bytes, c.offset, c.old, kHuge);
    Status s;
    size_t largest = testing::LargestAllocationDuring([&] {
      ResponseList out;
      s = DecodeResponseList(bytes, &out);
    });
    EXPECT_EQ(s.code(), StatusCode::kInternal) << "prefix at byte " << c.offset;
    EXPECT_LT(largest, kSmall) << "prefix at byte " << c.offset;
  }
}

// Whatever the input, decoding returns a status; and anything it accepts is canonical:
// encoding the result gives back exactly the input bytes.
TEST(WireCodec, RandomGarbageNeverCrashesAndAcceptedInputIsCanonical) {
  std::mt19937 rng(20240611);
  const std::string valid_requests = EncodeRequestList(EveryKindOfRequest());
  const std::string valid_responses = EncodeResponseList(EveryKindOfResponse());
  int accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      // Pure noise, often behind a valid magic so the decoder gets past the first byte.
      bytes.resize(rng() % 96);
      for (char& c : bytes) c = static_cast<char>(rng());
      if (!bytes.empty() && i % 4 == 0) {
        bytes[0] = (i % 8 == 0) ? valid_requests[0] : valid_responses[0];
      }
    } else {
      // A valid encoding with a few bytes flipped and maybe cut short.
      bytes = (i % 4 == 1) ? valid_requests : valid_responses;
      for (int flips = 1 + rng() % 4; flips > 0; --flips) {
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
      }
      if (rng() % 2) bytes.resize(rng() % (bytes.size() + 1));
    }
    RequestList requests;
    Status s = DecodeRequestList(bytes, &requests);
    ASSERT_TRUE(s.ok() || s.code() == StatusCode::kInternal) << "buffer " << i;
    if (s.ok()) {
      ++accepted;
      ASSERT_EQ(EncodeRequestList(requests), bytes) << "buffer " << i;
    }
    ResponseList responses;
    s = DecodeResponseList(bytes, &responses);
    ASSERT_TRUE(s.ok() || s.code() == StatusCode::kInternal) << "buffer " << i;
    if (s.ok()) {
      ++accepted;
      ASSERT_EQ(EncodeResponseList(responses), bytes) << "buffer " << i;
    }
  }
  // Flipped doubles and names stay valid, so some inputs must have been accepted.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace horde
