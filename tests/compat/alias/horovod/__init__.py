"""``import horovod`` for horde, as a user who switches an existing Horovod code base
would write it: every ``horovod.X`` module is the very ``horde.X`` module object (not a
copy), so state such as process sets and handles is shared, whichever name imported it."""

import importlib
import importlib.abc
import importlib.util
import sys


class _HordeUnderHorovodsName(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("horovod."):
            return None
        try:
            importlib.util.find_spec("horde" + fullname[len("horovod"):])
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module("horde" + spec.name[len("horovod"):])

    def exec_module(self, module):
        pass  # already executed when horde imported it


sys.meta_path.insert(0, _HordeUnderHorovodsName())
sys.modules[__name__] = importlib.import_module("horde")
