#include "core/message_fields.h"

#include <gtest/gtest.h>

#include <chrono>
#include <type_traits>

#include "core/fusion_planner.h"
#include "core/response_cache.h"
#include "core/wire_codec.h"

namespace horde {
namespace {

// Gives `value` another value of its type.
template <class T>
void Vary(T* value) {
  if constexpr (std::is_same<T, bool>::value) {
    *value = !*value;
  } else if constexpr (std::is_same<T, Response::Kind>::value) {
    const bool error = *value == Response::Kind::kError;
    *value = error ? Response::Kind::kCollective : Response::Kind::kError;
  } else if constexpr (std::is_enum<T>::value) {
    *value = static_cast<T>(static_cast<int>(*value) + 1);  // every enum has a second value
  } else if constexpr (std::is_arithmetic<T>::value) {
    *value = *value + 3;
  } else if constexpr (std::is_same<T, std::string>::value) {
    *value += "x";
  } else if constexpr (std::is_same<T, SteadyTime>::value) {
    *value += std::chrono::seconds(1);
  } else {
    value->resize(value->size() + 1);  // a list: one more entry
  }
}

// Each field's offset in its struct, in list order.
template <class Message>
std::vector<ptrdiff_t> ListedOffsets() {
  Message m;
  std::vector<ptrdiff_t> offsets;
  FieldList<Message>::ForEach([&](auto field) {
    offsets.push_back(reinterpret_cast<const char*>(&(m.*field.member)) -
                      reinterpret_cast<const char*>(&m));
  });
  return offsets;
}

// With the aggregate count (the static_asserts of core/message_fields.h), rising offsets
// mean every field is listed once, in declaration order (the wire order).
TEST(MessageFields, ListEveryFieldOnceInDeclarationOrder) {
  for (const auto& offsets : {ListedOffsets<Request>(), ListedOffsets<Response>()}) {
    ASSERT_FALSE(offsets.empty());
    for (size_t i = 1; i < offsets.size(); ++i) {
      EXPECT_LT(offsets[i - 1], offsets[i]) << "field " << i;
    }
  }
  EXPECT_EQ(ListedFieldCount<Request>(), 16u);
  EXPECT_EQ(ListedFieldCount<Response>(), 14u);
}

TEST(MessageFields, TheCacheComparesExactlyTheSignatureFields) {
  int signature_fields = 0;
  FieldList<Request>::ForEach([&](auto field) {
    Request mine;
    mine.name = "w";
    Request later = mine;
    Vary(&(later.*field.member));
    const bool in_signature = (decltype(field)::roles & kSignature) != 0;
    signature_fields += in_signature;
    EXPECT_EQ(SameSignature(mine, later), !in_signature) << field.name;
  });
  EXPECT_EQ(signature_fields, 11);
}

TEST(MessageFields, EveryWireFieldOfARequestTravelsAndNoOtherDoes) {
  FieldList<Request>::ForEach([&](auto field) {
    RequestList sent;
    sent.requests.resize(1);
    Vary(&(sent.requests[0].*field.member));
    RequestList received;
    ASSERT_TRUE(DecodeRequestList(EncodeRequestList(sent), &received).ok()) << field.name;
    const bool travels = (decltype(field)::roles & kWire) != 0;
    const auto& expected = travels ? sent.requests[0].*field.member : Request().*field.member;
    EXPECT_TRUE(received.requests[0].*field.member == expected) << field.name;
  });
}

TEST(MessageFields, EveryFieldOfAResponseTravels) {
  FieldList<Response>::ForEach([&](auto field) {
    ResponseList sent;
    sent.responses.resize(1);
    Vary(&(sent.responses[0].*field.member));
    ResponseList received;
    ASSERT_TRUE(DecodeResponseList(EncodeResponseList(sent), &received).ok()) << field.name;
    const auto& got = received.responses[0].*field.member;
    EXPECT_TRUE(got == sent.responses[0].*field.member) << field.name;
  });
}

// Two small allreduces fuse unless they differ in a fusion-key field.
TEST(MessageFields, FusionKeepsApartResponsesThatDifferInAKeyField) {
  int key_fields = 0;
  FieldList<Response>::ForEach([&](auto field) {
    // The per-name lists are what fusion concatenates; an error (kind) never fuses.
    if ((decltype(field)::roles & kPerName) != 0 || std::string(field.name) == "kind") return;
    PlannedResponse a;
    a.response.names = {"a"};
    a.response.tensor_sizes = {2};
    a.bytes = 8;
    PlannedResponse b = a;
    b.response.names = {"b"};
    Vary(&(b.response.*field.member));
    const bool key = (decltype(field)::roles & kFusionKey) != 0;
    key_fields += key;
    EXPECT_EQ(FusionPlanner(1024).Plan({a, b}).size(), key ? 2u : 1u) << field.name;
  });
  EXPECT_EQ(key_fields, 7);
}

}  // namespace
}  // namespace horde
