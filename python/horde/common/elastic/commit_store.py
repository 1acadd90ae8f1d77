"""Commits that outlive the process: one rank per host (its writer) keeps the newest
commit in the job directory (tmpfs under horderun), where the next generation finds it.

Trust: the directory may sit in a world-writable place (/dev/shm), and unpickling a file
runs whatever it says. So before every read or write the directory must be a real
directory (no symbolic link) of this user that no other user can enter, and a commit
file a regular file of this user; the first thing that is not so refuses the directory
for the rest of the process, with one line, and nothing in it is read or written again.
Payloads load with ``weights_only=True`` where torch can; a payload it cannot express is
unpickled in full, and only ever from a checked file.

Layout: one file per host, ``commit.g<generation>.c<count>``; the writer writes a
temporary file and renames it, so a writer killed mid-write leaves the previous commit
whole. Every write removes everything else named ``commit.*``: older commits and what
writers that died left.
"""

import errno
import inspect
import io
import math
import os
import pickle
import re
import stat
import typing

import torch

_PREFIX = "commit."
_NAME = re.compile(r"^commit\.g(\d+)\.c(\d+)$")
_WEIGHTS_ONLY = "weights_only" in inspect.signature(torch.load).parameters


class CommitId(typing.NamedTuple):
    """Which commit: of which job (its directory's name), stamped by which generation
    (the one that made it, or the last that synced onto it) and its count. Of several,
    the newest is the one with the largest (generation, count)."""

    job: str
    generation: int
    count: int

    def order(self):
        return (self.generation, self.count)

    def __str__(self):
        return f"g{self.generation}.c{self.count}"


class CommitWriteError(RuntimeError):
    """A host could not write a commit; every rank raises it at the same commit."""


class _Refused(Exception):
    """Why the job directory is not trusted."""


class CommitStore:
    def __init__(self, directory):
        self.directory = directory
        self.refused = None  # why, once refused

    def read_newest(self, job):
        """(CommitId, state) of the newest commit of `job` kept here, or None."""
        return self._use(lambda fd: _read_newest(fd, job))

    def write(self, commit, state):
        """Makes `commit` the one commit kept here; raises CommitWriteError when the
        directory has no room for it or the write fails."""
        serialized = _serialize(commit, state)
        self._use(lambda fd: _write(fd, self.directory, commit, serialized))

    def _use(self, action):
        if self.refused is not None:
            return None
        try:
            fd = _open_directory(self.directory)
        except _Refused as why:
            return self._refuse(why)
        try:
            return action(fd)
        except _Refused as why:
            return self._refuse(why)
        finally:
            os.close(fd)

    def _refuse(self, why):
        self.refused = str(why)
        os.write(2, f"horde elastic: refusing commits in {self.directory}: {why}; "
                    "this host keeps no commits\n".encode())


def _problem(st, is_kind, kind):
    """Why an entry that should be a `kind` of this user is not one, or None."""
    if stat.S_ISLNK(st.st_mode):
        return f"a symbolic link, expected a {kind}"
    if not is_kind(st.st_mode):
        return f"not a {kind}"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, expected {os.geteuid()}"
    return None


def _check_directory(st):
    problem = _problem(st, stat.S_ISDIR, "directory")
    if problem is None and st.st_mode & 0o077:
        problem = f"mode {stat.S_IMODE(st.st_mode):04o} lets other users in, expected 0700"
    if problem is not None:
        raise _Refused(problem)


def _open_directory(path):
    """A descriptor of the checked job directory, made (mode 0700) if it does not exist."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass  # whoever made it, the checks below decide
    except OSError as error:
        raise _Refused(f"cannot create it: {error.strerror}") from None
    try:
        _check_directory(os.lstat(path))
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        raise _Refused(f"cannot open it: {error.strerror}") from None
    try:
        _check_directory(os.fstat(fd))  # the one opened: it may have been swapped since
    except _Refused:
        os.close(fd)
        raise
    return fd


def _commits_newest_first(fd):
    found = [(int(m.group(1)), int(m.group(2)), m.group(0))
             for m in map(_NAME.match, os.listdir(fd)) if m]
    return [name for _, _, name in sorted(found, reverse=True)]


def _read_file(fd, name):
    try:
        # O_NONBLOCK: a FIFO under a commit's name must not block the open.
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _Refused(f"{name} is a symbolic link, expected a regular file") from None
        raise
    with os.fdopen(file, "rb") as f:
        problem = _problem(os.fstat(f.fileno()), stat.S_ISREG, "regular file")
        if problem is not None:
            raise _Refused(f"{name} is {problem}")
        return f.read()


def _read_newest(fd, job):
    for name in _commits_newest_first(fd):
        payload = _unpickle(_read_file(fd, name))
        commit = CommitId(*payload["commit"])
        if commit.job == job:
            return commit, payload["state"]
    return None


class _Serialized:
    """What torch.save writes, chunk by chunk, copied as it comes (the chunks it passes
    are views of its own buffers): half the cost of a BytesIO, which grows and copies."""

    def __init__(self):
        self.chunks = []
        self.size = 0

    def write(self, data):
        chunk = bytes(data)
        self.chunks.append(chunk)
        self.size += len(chunk)
        return len(chunk)

    def flush(self):
        pass


def _serialize(commit, state):
    serialized = _Serialized()
    torch.save({"commit": list(commit), "state": state}, serialized)
    return serialized


def _unpickle(data):
    if not _WEIGHTS_ONLY:
        return torch.load(io.BytesIO(data))
    try:
        return torch.load(io.BytesIO(data), weights_only=True)
    except pickle.UnpicklingError:
        # Objects other than tensors and plain containers (an ObjectState value), or
        # torch 1.13, whose weights_only reader rejects floats: a full unpickle, of a
        # file that passed the checks.
        return torch.load(io.BytesIO(data), weights_only=False)


def _write(fd, directory, commit, serialized):
    name = _PREFIX + str(commit)
    previous = next(iter(_commits_newest_first(fd)), None)
    _remove_all_but(fd, previous)  # dead writers' temporary files first: room
    _check_room(fd, directory, commit, serialized.size)
    temporary = f"{name}.tmp{os.getpid()}"
    try:
        file = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                       0o600, dir_fd=fd)
        with os.fdopen(file, "wb") as f:
            f.writelines(serialized.chunks)
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError as error:
        _remove_all_but(fd, previous)
        raise CommitWriteError(f"cannot write commit {commit} to {directory}: "
                               f"{error.strerror}") from None
    _remove_all_but(fd, name)


def _remove_all_but(fd, keep):
    for name in os.listdir(fd):
        if name.startswith(_PREFIX) and name != keep:
            os.unlink(name, dir_fd=fd)


def _check_room(fd, directory, commit, size):
    """Fails before writing when the file system cannot hold the new commit beside the
    previous one: ENOSPC would come mid-write, and a full /dev/shm fails others too."""
    fs = os.fstatvfs(fd)
    if math.ceil(size / fs.f_frsize) <= fs.f_bavail:
        return
    raise CommitWriteError(
        f"cannot write commit {commit} to {directory}: it needs {_size(size)} and "
        f"{_size(fs.f_bavail * fs.f_frsize)} are free there; the directory must hold two "
        "commits (the previous one stays until the new one is whole): give it more room "
        f"(a larger /dev/shm, e.g. docker run --shm-size={math.ceil(2 * size / 2**20)}m)")


def _size(count):
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count / 2**10:.1f} KiB"
