"""Commits that outlive the process: each rank writes its last commit to the job
directory (tmpfs under horderun), so the next generation's ranks on that host find it.

A file is ``commit.r<rank>.c<count>``; a rank writes a temporary file and renames it,
so a rank killed mid-write leaves its previous commit whole. ``count`` grows by one per
commit and is the same on every rank for the same commit, so the newest commit is the
one with the largest count, whichever rank wrote it.
"""

import os
import re

import torch

_NAME = re.compile(r"^commit\.r(\d+)\.c(\d+)$")


class CommitStore:
    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, mode=0o700, exist_ok=True)

    def write(self, rank, count, payload):
        path = os.path.join(self.directory, f"commit.r{rank}.c{count}")
        tmp = path + f".tmp{os.getpid()}"
        torch.save(payload, tmp)
        os.replace(tmp, path)
        for name, (owner, older) in self._commits():
            if owner == rank and older < count:
                os.unlink(os.path.join(self.directory, name))

    def newest_count(self):
        counts = [count for _, (_, count) in self._commits()]
        return max(counts, default=0)

    def load_newest(self):
        """The payload of the newest commit on this host, or None when there is none."""
        commits = sorted(self._commits(), key=lambda item: item[1][1], reverse=True)
        for name, _ in commits:
            try:
                return torch.load(os.path.join(self.directory, name))
            except FileNotFoundError:  # replaced by a newer one since listed
                continue
        return None

    def _commits(self):
        found = []
        for name in os.listdir(self.directory):
            match = _NAME.match(name)
            if match:
                found.append((name, (int(match.group(1)), int(match.group(2)))))
        return found
