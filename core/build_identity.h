#pragma once

#include <string>

namespace horde {

// What ranks must have in common to understand each other: horde's version, the format
// of the negotiation messages, and whether GPU tensors go through NCCL (a build without
// the GPU path would run another algorithm for the same response). A node with a stale
// install otherwise exchanges messages it cannot read; init() compares these instead.
struct BuildIdentity {
  std::string version;   // the project's version (CMake's project(VERSION))
  int wire_format = 0;   // kWireFormat of the build
  std::string gpu_path;  // "NCCL <version>" or "none"
  std::string host;      // where the rank runs: named in a mismatch, never compared

  // This process's, with `gpu_path` as the caller (which knows the GPU ops) gives it.
  static BuildIdentity Current(std::string gpu_path);

  // "horde 0.1.0, wire format 2, GPU path none": what must be equal on every rank.
  std::string Summary() const;
  // One line for the exchange, Summary() and host; Parse() reads it back.
  std::string Encode() const;
  static bool Parse(const std::string& line, BuildIdentity* out);
};

}  // namespace horde
