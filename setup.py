"""Builds horde with CMake and installs the `horde` package with its extension.

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation .

or, with torch from pip or conda, in that environment: pip install --no-build-isolation .
(the build takes torch from the interpreter that runs it: cmake/torch.cmake).

The CMake build lives in build/python (or $HORDE_BUILD_DIR; reused between installs,
with ccache) and is
installed with the package folder horde/ as its prefix: the extension and the horde
libraries land in horde/torch/.
"""

import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    """The version in CMakeLists.txt's project(): the one place the version is written."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        match = re.search(r"^project\(horde VERSION ([0-9.]+)", f.read(), re.M)
    if match is None:
        raise RuntimeError("CMakeLists.txt has no 'project(horde VERSION x.y.z' line; "
                           "setup.py expects one and takes the version from it")
    return match.group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("HORDE_BUILD_DIR") or os.path.join(ROOT, "build", "python")
        package_root = os.path.abspath(self.build_lib)
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir,
            "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            # scripts/test.sh builds the C++ tests in the same tree (one build, not two).
            "-DHORDE_BUILD_TESTS=" + os.environ.get("HORDE_BUILD_TESTS", "OFF"),
            # CMake takes torch (its CMake package, its C++ ABI flag) from this interpreter:
            # cmake/torch.cmake.
            f"-DPython3_EXECUTABLE={sys.executable}", "-DHORDE_REQUIRE_PYTHON_TORCH=ON",
            # More arguments for CMake, split like a shell would: e.g.
            # HORDE_CMAKE_ARGS="-DMPI_CXX_COMPILER=mpicxx.mpich" for another MPI.
            *shlex.split(os.environ.get("HORDE_CMAKE_ARGS", "")),
        ]
        jobs = os.environ.get("HORDE_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs])
        # Every install() rule's destination is relative to the package folder horde/.
        subprocess.check_call(["cmake", "--install", build_dir,
                               "--prefix", os.path.join(package_root, "horde")])


setup(
    name="horde",
    version=project_version(),
    description="A Horovod-style distributed training runtime for PyTorch",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[CMakeExtension("horde.torch._ops")],
    cmdclass={"build_ext": CMakeBuild},
    # The launcher and the topology tool are installed in horde/bin/; these put them on PATH.
    entry_points={"console_scripts": ["horderun=horde.launcher_shim:main",
                                      "horde-topology=horde.launcher_shim:topology"]},
    python_requires=">=3.8",
    zip_safe=False,
)
