#pragma once

#include <string>

#include "core/request.h"
#include "core/response.h"
#include "horde/status.h"

namespace horde {

// Compact binary encoding of what ranks exchange during negotiation. Little-endian,
// length-prefixed, with a magic byte per message. Decoding validates every length, enum
// and count against the bytes actually present: truncated or garbage input is an error,
// never an out-of-bounds read.

// The format's number, compared across ranks at init() (core/build_identity.h): raise it
// with every change to the encoding or to the fields of core/message_fields.h.
inline constexpr int kWireFormat = 3;

std::string EncodeRequestList(const RequestList& list);
Status DecodeRequestList(const std::string& bytes, RequestList* list);

std::string EncodeResponseList(const ResponseList& list);
Status DecodeResponseList(const std::string& bytes, ResponseList* list);

}  // namespace horde
