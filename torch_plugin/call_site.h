#pragma once

#include <string>

#include "core/config.h"

namespace horde {
namespace torch_ops {

// Where the program submits a collective from, e.g. "train.py:57": the innermost frame
// of the calling thread's Python stack whose file lies outside the horde and torch
// packages (the user's own code, not the wrappers around the call). The file is the one
// its code object names, made relative when it lies under the current directory. Stall
// reports and mismatch errors name it (Request::call_site). Empty when there is no such
// frame: the C++ API, a thread that does not hold the GIL (autograd's, which runs the
// optimizer's gradient hooks), or a program without Python.
std::string CurrentCallSite();

// The call site that a submission of `name` carries under `mode` (HORDE_CALL_SITES).
// kFirst looks at the stack for unnamed operations (the runtime numbers them, so the
// number says nothing) and for the first submission of each name on this rank, and
// reuses the site found for a name after that: a training loop's named collectives cost
// a map lookup instead of a walk of the stack. kAlways looks every time; kOff never.
std::string CallSiteFor(CallSiteMode mode, const std::string& name);

}  // namespace torch_ops
}  // namespace horde
