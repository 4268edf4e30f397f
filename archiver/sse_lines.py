"""Lines of an event stream, each at most ``cap`` bytes (pure: fed chunks, no I/O).

A server that sends one endless ``data:`` line would otherwise grow the reader's buffer without
bound; past ``cap`` bytes the line is dropped as it comes (its start is forgotten, the rest is
skipped up to its end) and counted, and the lines after it are read as usual. At most ``cap``
bytes plus one chunk are ever held.
"""

from __future__ import annotations

__all__ = ["LineReader"]


class LineReader:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._buf = bytearray()
        self._skipping = False  # inside a line already over the cap: drop up to its end
        self.oversized = 0  # lines dropped
        self.peak = 0  # the most bytes held at once (a chunk included)

    def feed(self, chunk: bytes) -> list[bytes]:
        """The whole lines ``chunk`` completes (without their end, ``\\r\\n`` or ``\\n``)."""
        out: list[bytes] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            elif len(self._buf) + end - start > self.cap:
                self.oversized += 1
            else:
                self._buf += chunk[start:end]
                line = bytes(self._buf)
                out.append(line[:-1] if line.endswith(b"\r") else line)
            self._buf.clear()
            start = end + 1
        rest = len(chunk) - start
        self.peak = max(self.peak, len(self._buf) + len(chunk))
        if self._skipping:
            return out
        if len(self._buf) + rest > self.cap:
            self.oversized += 1
            self._buf.clear()
            self._skipping = True
        else:
            self._buf += chunk[start:]
        return out

    @property
    def held(self) -> int:
        """Bytes of the unfinished line kept now."""
        return len(self._buf)
