"""horde: a Horovod-style distributed training runtime. Use ``import horde.torch as hvd``."""

import os as _os

# Written by the build from CMakeLists.txt's project(VERSION) (python/CMakeLists.txt).
from horde._version import __version__  # noqa: F401

# The prefix to put on CMAKE_PREFIX_PATH for find_package(horde) in a C++ LibTorch
# project, as torch.utils.cmake_prefix_path is for torch.
cmake_prefix_path = _os.path.dirname(_os.path.abspath(__file__))
