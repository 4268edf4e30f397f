"""What goes over the wire: compressed, cacheable static files, and a refresh that re-downloads
nothing when nothing changed (ETag / If-None-Match)."""

from __future__ import annotations

from console_seed import Store
from fastapi.testclient import TestClient


def test_static_files_are_gzipped_and_revalidated(client: TestClient) -> None:
    for name in ("app.js", "console.css", "session.js"):
        r = client.get(f"/static/{name}", headers={"Accept-Encoding": "gzip"})
        assert r.status_code == 200
        assert r.headers["content-encoding"] == "gzip", name
        assert r.headers["cache-control"] == "no-cache"
        again = client.get(f"/static/{name}", headers={"If-None-Match": r.headers["etag"]})
        assert again.status_code == 304 and again.content == b""


def test_json_is_gzipped_and_an_unchanged_page_is_a_304(client: TestClient, store: Store) -> None:
    r = client.get("/api/sessions", headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
    raw = int(r.headers["content-length"])
    assert raw * 3 < len(r.content), "the sessions page compresses at least three-fold"
    tag = r.headers["etag"]
    assert r.headers["cache-control"] == "no-cache"
    same = client.get("/api/sessions", headers={"If-None-Match": tag})
    assert (same.status_code, same.content, same.headers["etag"]) == (304, b"", tag)
    other = client.get("/api/sessions", params={"limit": 1}, headers={"If-None-Match": tag})
    assert other.status_code == 200 and other.headers["etag"] != tag


def test_errors_and_writes_carry_no_etag(client: TestClient, auth: dict[str, str]) -> None:
    missing = client.get("/api/sessions/ses_nope")
    assert missing.status_code == 404 and "etag" not in missing.headers
    r = client.post("/api/v1/heartbeat", json={"driver": "d", "host": "h"}, headers=auth)
    assert r.status_code == 200 and "etag" not in r.headers
