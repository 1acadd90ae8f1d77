#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/request.h"
#include "core/response.h"

namespace horde {

// What a field of a Request or a Response takes part in.
enum FieldRole : uint8_t {
  kLocal = 0,            // never leaves the rank
  kWire = 1u << 0,       // encoded, in list order (core/wire_codec.cc)
  kSignature = 1u << 1,  // Request: a cached response answers only an equal request
  kFusionKey = 1u << 2,  // Response: fused only with responses equal in these
  kPerName = 1u << 3,    // Response: a slice per name, concatenated when fused
};

// One field: its name, where it is (a pointer to member) and its roles (at compile time,
// so that code for one role only meets the types of the fields that have it).
template <uint8_t Roles, class Message, class T>
struct Field {
  static constexpr uint8_t roles = Roles;
  using Type = T;
  const char* name;
  T Message::*member;
};

template <uint8_t Roles, class Message, class T>
constexpr Field<Roles, Message, T> MakeField(const char* name, T Message::*member) {
  return {name, member};
}

// The one list of a message's fields, in declaration order: FieldList<M>::ForEach(f)
// calls f(field) for each. A field added to the struct and not here fails to compile
// (the static_asserts below); tests/cpp/message_fields_test.cc checks the order.
template <class Message>
struct FieldList;

template <>
struct FieldList<Request> {
  template <class F>
  static constexpr void ForEach(F&& f) {
    constexpr uint8_t kCompared = kWire | kSignature;
    f(MakeField<kWire>("rank", &Request::rank));
    f(MakeField<kCompared>("name", &Request::name));
    f(MakeField<kCompared>("op", &Request::op));
    f(MakeField<kCompared>("dtype", &Request::dtype));
    f(MakeField<kCompared>("shape", &Request::shape));
    f(MakeField<kCompared>("reduce_op", &Request::reduce_op));
    f(MakeField<kCompared>("prescale", &Request::prescale));
    f(MakeField<kCompared>("postscale", &Request::postscale));
    f(MakeField<kCompared>("root", &Request::root));
    f(MakeField<kCompared>("device", &Request::device));
    f(MakeField<kCompared>("group", &Request::group));
    f(MakeField<kCompared>("group_size", &Request::group_size));
    f(MakeField<kWire>("numbering_epoch", &Request::numbering_epoch));
    f(MakeField<kLocal>("submitted", &Request::submitted));
    f(MakeField<kWire>("waited_microseconds", &Request::waited_microseconds));
    // Not a signature: a cached response answers the same request from another line.
    f(MakeField<kWire>("call_site", &Request::call_site));
  }
};

template <>
struct FieldList<Response> {
  template <class F>
  static constexpr void ForEach(F&& f) {
    constexpr uint8_t kKey = kWire | kFusionKey;
    f(MakeField<kWire>("kind", &Response::kind));
    f(MakeField<kKey>("op", &Response::op));
    f(MakeField<kWire | kPerName>("names", &Response::names));
    f(MakeField<kWire>("error_message", &Response::error_message));
    f(MakeField<kKey>("dtype", &Response::dtype));
    f(MakeField<kKey>("reduce_op", &Response::reduce_op));
    f(MakeField<kKey>("prescale", &Response::prescale));
    f(MakeField<kKey>("postscale", &Response::postscale));
    f(MakeField<kWire>("root", &Response::root));
    f(MakeField<kKey>("device", &Response::device));
    f(MakeField<kWire | kPerName>("first_dims", &Response::first_dims));
    f(MakeField<kWire | kPerName>("tensor_sizes", &Response::tensor_sizes));
    f(MakeField<kKey>("with_joined", &Response::with_joined));
    f(MakeField<kWire>("ranks", &Response::ranks));
  }
};

// Whether every field of `a` and `b` with all of `roles` is equal.
template <uint8_t Roles, class Message>
bool EqualIn(const Message& a, const Message& b) {
  bool equal = true;
  FieldList<Message>::ForEach([&](auto field) {
    if constexpr ((decltype(field)::roles & Roles) == Roles) {
      equal = equal && a.*field.member == b.*field.member;
    }
  });
  return equal;
}

template <class Message>
constexpr size_t ListedFieldCount() {
  size_t n = 0;
  FieldList<Message>::ForEach([&n](auto) { ++n; });
  return n;
}

namespace fields_detail {

// Converts to any field type: T{AnyField{}, ...} compiles with at most as many as T
// has fields, which counts them.
struct AnyField {
  template <class T>
  operator T() const;
};

template <class T, class Indices, class = void>
struct BraceInitializable : std::false_type {};
template <class T, size_t... I>
struct BraceInitializable<T, std::index_sequence<I...>,
                          std::void_t<decltype(T{(void(I), AnyField{})...})>> : std::true_type {};

template <class T, size_t N = 0>
constexpr size_t AggregateFieldCount() {
  if constexpr (BraceInitializable<T, std::make_index_sequence<N + 1>>::value) {
    return AggregateFieldCount<T, N + 1>();
  } else {
    return N;
  }
}

}  // namespace fields_detail

static_assert(std::is_aggregate<Request>::value && std::is_aggregate<Response>::value,
              "fields are counted by aggregate initialization");
static_assert(fields_detail::AggregateFieldCount<Request>() == ListedFieldCount<Request>(),
              "a field of Request is missing from FieldList<Request> (core/message_fields.h)");
static_assert(fields_detail::AggregateFieldCount<Response>() == ListedFieldCount<Response>(),
              "a field of Response is missing from FieldList<Response> (core/message_fields.h)");

}  // namespace horde
