"""One version, written only in CMakeLists.txt's project(VERSION): horde.__version__, the
installed distribution's (the wheel's, which setup.py reads from CMakeLists.txt) and the
CMake package's, which find_package(horde X.Y) checks, all agree with it."""

import importlib.metadata
import os
import re
import subprocess
import tempfile

import horde

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"^project\(horde VERSION ([0-9.]+)", f.read(), re.M).group(1)


def test_python_and_wheel_versions_are_the_projects():
    assert horde.__version__ == project_version()
    assert importlib.metadata.version("horde") == project_version()


def test_cmake_package_is_exactly_the_projects_version():
    # What find_package(horde <version> EXACT) does first: the package's version file,
    # given the version asked for. (A folder of this process's own: pytest's tmp_path
    # folders of several ranks race in their clean-up.)
    major, minor, patch = project_version().split(".")
    version_file = os.path.join(horde.cmake_prefix_path, "lib", "cmake", "horde",
                                "hordeConfigVersion.cmake")
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "check_version.cmake")
        with open(script, "w") as f:
            f.write(f'set(PACKAGE_FIND_VERSION "{project_version()}")\n'
                    f"set(PACKAGE_FIND_VERSION_MAJOR {major})\n"
                    f"set(PACKAGE_FIND_VERSION_MINOR {minor})\n"
                    f"set(PACKAGE_FIND_VERSION_PATCH {patch})\n"
                    f'include("{version_file}")\n'
                    'message("${PACKAGE_VERSION} exact=${PACKAGE_VERSION_EXACT}")\n')
        run = subprocess.run(["cmake", "-P", script], capture_output=True, text=True,
                             timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip() == f"{project_version()} exact=TRUE"
