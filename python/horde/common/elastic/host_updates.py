"""How a rank learns that the job's hosts changed: horderun sends SIGUSR1 to mpirun,
which passes it to every rank (no listener, no port). The handler only sets a flag; the
next ``State.check_host_updates()`` agrees on it across ranks with one allreduce.

The flag is a plain module global, not a ``threading.Event``: a rank can receive the
signal twice (mpirun signals the rank's process group and horderun's rank wrapper passes
it on as well), and a second handler run inside the first one's ``Event.set()`` would
wait forever on the lock the first one holds. Assigning a global takes no lock.

At exit the signal is ignored: while the interpreter shuts down it restores SIGUSR1's
default action (which ends the process), and an update that comes as a finished rank
exits would otherwise kill it, and horderun would take the finished job for a reset."""

import atexit
import ctypes
import signal

_pending = False
_installed = False


def _on_hosts_updated(signum, frame):
    global _pending
    _pending = True


def _ignore_from_now_on():
    # The kernel first: a signal caught between Python's check for pending signals and
    # its switch to SIG_IGN would be reported as "ignored due to race condition".
    ctypes.CDLL(None).signal(signal.SIGUSR1, ctypes.c_void_p(1))  # SIG_IGN
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def install():
    """Installs the SIGUSR1 handler (main thread only, as Python requires)."""
    global _installed
    if not _installed:
        signal.signal(signal.SIGUSR1, _on_hosts_updated)
        atexit.register(_ignore_from_now_on)
        _installed = True


def pending():
    return _pending


def clear():
    global _pending
    _pending = False
