// clang-format off: CPython requires Python.h before any standard header.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
// clang-format on

#include <unistd.h>

#include <climits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "torch_plugin/call_site.h"

// libhorde_torch does not link Python: in a Python program the interpreter provides
// these symbols; a C++ program has none. Weak, they are null there, and no call site is
// found. Only CPython's public API, alike in 3.9 to 3.13.
#pragma weak Py_IsInitialized
#pragma weak PyGILState_Check
#pragma weak PyEval_GetFrame
#pragma weak PyFrame_GetBack
#pragma weak PyFrame_GetCode
#pragma weak PyFrame_GetLineNumber
#pragma weak PyObject_GetAttrString
#pragma weak PyUnicode_AsUTF8AndSize
#pragma weak PyUnicode_FromString
#pragma weak PyImport_GetModule
#pragma weak PyModule_GetFilenameObject
#pragma weak PyErr_Clear
#pragma weak Py_IncRef
#pragma weak Py_DecRef

namespace horde {
namespace torch_ops {
namespace {

// A program that forgets its names (say, a new one every step) makes the map start
// over rather than grow without end.
constexpr size_t kMaxRememberedNames = 65536;

bool PythonLinked() {
  return &Py_IsInitialized && &PyGILState_Check && &PyEval_GetFrame && &PyFrame_GetBack &&
         &PyFrame_GetCode && &PyFrame_GetLineNumber && &PyObject_GetAttrString &&
         &PyUnicode_AsUTF8AndSize && &PyUnicode_FromString && &PyImport_GetModule &&
         &PyModule_GetFilenameObject && &PyErr_Clear && &Py_IncRef && &Py_DecRef;
}

// Whether this thread may use Python's API now: an interpreter runs and this thread
// holds its GIL.
bool HoldsPython() {
  static const bool linked = PythonLinked();
  return linked && Py_IsInitialized() && PyGILState_Check();
}

// The text of `text`, a new reference that this takes, as the call that made it returned
// it: empty when that call failed (its error is dropped: the call site is only unknown)
// or gave something else than a str.
std::string TakeText(PyObject* text) {
  if (text == nullptr) {
    PyErr_Clear();
    return "";
  }
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
  std::string out;
  if (utf8 != nullptr) {
    out.assign(utf8, static_cast<size_t>(size));
  } else {
    PyErr_Clear();
  }
  Py_DecRef(text);
  return out;
}

// "/…/site-packages/torch/" for a package that is imported; empty otherwise.
std::string PackageFolder(const char* package) {
  PyObject* name = PyUnicode_FromString(package);
  PyObject* module = name != nullptr ? PyImport_GetModule(name) : nullptr;  // never imports
  if (module == nullptr) PyErr_Clear();  // not imported (no error), or the lookup failed
  const std::string init = module != nullptr ? TakeText(PyModule_GetFilenameObject(module)) : "";
  Py_DecRef(module);
  Py_DecRef(name);
  const size_t slash = init.rfind('/');
  return slash == std::string::npos ? "" : init.substr(0, slash + 1);
}

// Whether `file` is the library's own code: horde's wrappers, or torch's (an optimizer's
// step, a module's __call__) between the program and the call.
bool InLibrary(const std::string& file) {
  // The packages are imported before anything is submitted from Python.
  static const std::vector<std::string> folders = {PackageFolder("horde"), PackageFolder("torch")};
  for (const std::string& folder : folders) {
    if (!folder.empty() && file.compare(0, folder.size(), folder) == 0) return true;
  }
  return false;
}

// `file` relative to the current directory when it lies under it, else as it is.
std::string Shortened(const std::string& file) {
  char cwd[PATH_MAX];
  if (file.empty() || file[0] != '/' || getcwd(cwd, sizeof(cwd)) == nullptr) return file;
  const std::string prefix = std::string(cwd) + (cwd[1] == '\0' ? "" : "/");
  if (file.size() > prefix.size() && file.compare(0, prefix.size(), prefix) == 0) {
    return file.substr(prefix.size());
  }
  return file;
}

// The file of `frame`'s code, as its code object names it.
std::string FileOf(PyFrameObject* frame) {
  PyCodeObject* code = PyFrame_GetCode(frame);
  const std::string file = TakeText(
      PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename"));
  Py_DecRef(reinterpret_cast<PyObject*>(code));
  return file;
}

}  // namespace

std::string CurrentCallSite() {
  if (!HoldsPython()) return "";
  // The walk holds a reference to the frame it looks at (PyFrame_GetBack gives new ones;
  // PyEval_GetFrame a borrowed one).
  PyFrameObject* frame = PyEval_GetFrame();
  Py_IncRef(reinterpret_cast<PyObject*>(frame));
  std::string site;
  while (frame != nullptr) {
    const std::string file = FileOf(frame);
    if (!file.empty() && !InLibrary(file)) {
      site = Shortened(file) + ":" + std::to_string(PyFrame_GetLineNumber(frame));
      break;
    }
    PyFrameObject* caller = PyFrame_GetBack(frame);
    Py_DecRef(reinterpret_cast<PyObject*>(frame));
    frame = caller;
  }
  Py_DecRef(reinterpret_cast<PyObject*>(frame));
  return site;
}

std::string CallSiteFor(CallSiteMode mode, const std::string& name) {
  if (mode == CallSiteMode::kOff) return "";
  if (mode == CallSiteMode::kAlways || name.empty()) return CurrentCallSite();
  // Never destroyed: a thread may submit while the process exits.
  static std::mutex* const mutex = new std::mutex;
  static auto* const remembered = new std::unordered_map<std::string, std::string>;
  {
    std::lock_guard<std::mutex> lock(*mutex);
    auto it = remembered->find(name);
    if (it != remembered->end()) return it->second;
  }
  std::string site = CurrentCallSite();
  // Not found (a thread without Python): a later submission from Python may find it.
  if (site.empty()) return site;
  std::lock_guard<std::mutex> lock(*mutex);
  if (remembered->size() >= kMaxRememberedNames) remembered->clear();
  remembered->emplace(name, site);
  return site;
}

}  // namespace torch_ops
}  // namespace horde
