"""The ``horderun`` and ``horde-topology`` commands: run the binaries installed in
``horde/bin/``.

The launcher is C++ (``launcher/``); this console script only puts it on the virtual
environment's PATH. It tells the launcher which Python it came from, so that
``horderun --check-build`` reports the horde and torch of this environment.
"""

import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "horderun")
    os.environ["HORDERUN_PYTHON"] = sys.executable
    os.execv(binary, ["horderun"] + sys.argv[1:])


def topology():
    """``horde-topology``: the link probe and the topology planner (mpi_ops/topology_tool.cc)."""
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "horde-topology")
    os.execv(binary, ["horde-topology"] + sys.argv[1:])
