"""uvicorn's httptools protocol, keeping the request target as sent.

httptools parses `GET http://evil.example/api/health` to the path `/api/health` and drops the
host it named, so no ASGI layer can see that the target was in absolute form (h11 keeps it
whole). Here the raw target stays in `raw_path`, and `web.hosts.HostCheck` refuses it.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["StrictHttpToolsProtocol"]


class StrictHttpToolsProtocol(HttpToolsProtocol):
    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        # the request's task is created above but has not run yet: it sees this scope
        if not self.url.startswith(b"/") and "raw_path" in self.scope:
            self.scope["raw_path"] = self.url.partition(b"?")[0]
