"""The benchmark's progress bar on stderr."""

from __future__ import annotations

import sys
import time


class Progress:
    """A progress bar on stderr: redrawn in place on a terminal, a line per case otherwise."""

    WIDTH = 28

    def __init__(self, total, stream=None):
        self.stream = stream or sys.stderr
        self.total = total
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.index = 0
        self.label = ""

    def begin(self, index, label):
        self.index, self.label = index, label
        if self.tty:
            self.draw(0.0, force=True)
        else:
            self.stream.write(
                f"bench [{index + 1:>{len(str(self.total))}}/{self.total}] {label}  ({self._elapsed()} elapsed)\n"
            )
            self.stream.flush()

    def draw(self, fraction, force=False):
        if not self.tty:
            return
        now = time.monotonic()
        if not force and now - self.last_draw < 0.1:
            return
        self.last_draw = now
        done = (self.index + fraction) / max(self.total, 1)
        filled = int(done * self.WIDTH)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.stream.write(f"\r[{bar}] {self.index + 1}/{self.total} {self.label:<34.34} {self._elapsed()}")
        self.stream.flush()

    def finish(self):
        if self.tty:
            self.stream.write("\r" + " " * (self.WIDTH + 60) + "\r")
        self.stream.write(f"bench: {self.total} cases in {self._elapsed()}\n")
        self.stream.flush()

    def _elapsed(self):
        s = int(time.monotonic() - self.start)
        return f"{s // 60}:{s % 60:02d}"
