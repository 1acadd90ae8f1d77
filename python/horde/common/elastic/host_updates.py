"""How a rank learns that the job's hosts changed: horderun sends SIGUSR1 to mpirun,
which passes it to every rank (no listener, no port). The handler only sets a flag; the
next ``State.check_host_updates()`` agrees on it across ranks with one allreduce.

The flag is a plain module global, not a ``threading.Event``: a rank can receive the
signal twice (mpirun signals the rank's process group and horderun's rank wrapper passes
it on as well), and a second handler run inside the first one's ``Event.set()`` would
wait forever on the lock the first one holds. Assigning a global takes no lock."""

import signal

_pending = False
_installed = False


def _on_hosts_updated(signum, frame):
    global _pending
    _pending = True


def install():
    """Installs the SIGUSR1 handler (main thread only, as Python requires)."""
    global _installed
    if not _installed:
        signal.signal(signal.SIGUSR1, _on_hosts_updated)
        _installed = True


def pending():
    return _pending


def clear():
    global _pending
    _pending = False
