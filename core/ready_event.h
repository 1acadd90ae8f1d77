#pragma once

namespace horde {

// Marks the point in a framework's device work after which a submitted tensor holds its
// final values (e.g. an event recorded on the framework's current CUDA stream at submit
// time). core only carries it; the GPU ops make their own stream wait on it, so neither
// the submitting thread nor the background loop ever blocks on the device.
class ReadyEvent {
 public:
  virtual ~ReadyEvent() = default;
  // Whether the device has reached the point (host-side poll; never blocks).
  virtual bool Ready() = 0;
};

}  // namespace horde
