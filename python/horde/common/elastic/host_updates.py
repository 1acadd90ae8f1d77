"""How a rank learns that the job's hosts changed: horderun sends SIGUSR1 to mpirun,
which passes it to every rank (no listener, no port). The handler only sets a flag; the
next ``State.check_host_updates()`` agrees on it across ranks with one allreduce."""

import signal
import threading

_pending = threading.Event()
_installed = False


def install():
    """Installs the SIGUSR1 handler (main thread only, as Python requires)."""
    global _installed
    if not _installed:
        signal.signal(signal.SIGUSR1, lambda signum, frame: _pending.set())
        _installed = True


def pending():
    return _pending.is_set()


def clear():
    _pending.clear()
