#pragma once

#include <functional>
#include <memory>

#include "core/config.h"
#include "core/runtime.h"

namespace horde {

// The process's one Runtime, held here at the API boundary and nowhere else.
using RuntimeFactory = std::function<Status(const Config&, std::unique_ptr<Runtime>*)>;

// Reads the config from the environment and builds the runtime with `factory`.
// A second call while running does nothing; after a shutdown (of this rank or any
// other) it starts a new runtime.
Status InitRuntime(const RuntimeFactory& factory);
void ShutdownRuntime();
// The running runtime, or nullptr before init() and after shutdown().
std::shared_ptr<Runtime> CurrentRuntime();

}  // namespace horde
