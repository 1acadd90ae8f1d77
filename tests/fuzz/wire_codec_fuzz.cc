// libFuzzer target for the negotiation wire codec (core/wire_codec.h): every input is
// decoded both as a RequestList and as a ResponseList. The sanitizers catch crashes and
// out-of-bounds reads; this target checks the rest of the contract itself: whatever
// decodes must re-encode to exactly the input bytes and decode again. The encoding is
// canonical (fixed-width fields, strict booleans and enums, no trailing bytes), so byte
// equality is the strictest round trip and covers every field without comparing structs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/wire_codec.h"

namespace {

void CheckRoundTrip(const char* what, const std::string& input, const std::string& reencoded,
                    const horde::Status& redecoded) {
  if (reencoded != input) {
    std::fprintf(stderr, "%s: decoded %zu bytes but re-encoded %zu different bytes\n", what,
                 input.size(), reencoded.size());
    std::abort();
  }
  if (!redecoded.ok()) {
    std::fprintf(stderr, "%s: its own encoding does not decode: %s\n", what,
                 redecoded.message().c_str());
    std::abort();
  }
}

void FuzzRequestList(const std::string& input) {
  horde::RequestList list;
  if (!horde::DecodeRequestList(input, &list).ok()) return;
  std::string reencoded = horde::EncodeRequestList(list);
  horde::RequestList again;
  CheckRoundTrip("request list", input, reencoded, horde::DecodeRequestList(reencoded, &again));
}

void FuzzResponseList(const std::string& input) {
  horde::ResponseList list;
  if (!horde::DecodeResponseList(input, &list).ok()) return;
  std::string reencoded = horde::EncodeResponseList(list);
  horde::ResponseList again;
  CheckRoundTrip("response list", input, reencoded, horde::DecodeResponseList(reencoded, &again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The codec takes a std::string. A heap-allocated copy is sized to the input, so ASan
  // flags a read past it; inputs under 16 bytes sit in the string's inline buffer, which
  // ASan cannot split, but every seed and most mutations are longer.
  std::string input(reinterpret_cast<const char*>(data), size);
  FuzzRequestList(input);
  FuzzResponseList(input);
  return 0;
}
