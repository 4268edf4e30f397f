"""A server URL given with credentials (`http://user:pass@host`) is shown without them: in
`octel doctor`, in every `octel watch` log line and in every error the CLI prints."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from octelrun import Octel
from realparts import free_port

from archiver.urls import without_credentials

# what RFC 3986 allows in userinfo: unreserved, percent-encoded, sub-delims and ":"
_PART = st.text(st.sampled_from("abcXYZ019-._~%!$&'()*+,;=:"), min_size=1)


@given(
    user=_PART,
    password=_PART,
    host=st.from_regex(r"[a-z0-9.-]{1,20}(:[0-9]{1,5})?", fullmatch=True),
    path=st.from_regex(r"(/[a-z0-9@]{0,8}){0,3}(\?q=[a-z@]{0,5})?", fullmatch=True),
    scheme=st.sampled_from(["http", "https", "HTTP", "postgresql+psycopg"]),
)
def test_credentials_are_taken_out_and_the_rest_kept(
    user: str, password: str, host: str, path: str, scheme: str
) -> None:
    url = f"{scheme}://{user}:{password}@{host}{path}"
    shown = without_credentials(f"no answer from {url}: ConnectError")
    assert shown == f"no answer from {scheme}://{host}{path}: ConnectError"


@given(st.text())
def test_text_without_a_url_with_userinfo_is_unchanged(text: str) -> None:
    if "://" not in text:
        assert without_credentials(text) == text


def test_a_password_with_an_at_sign_goes_too() -> None:
    assert without_credentials("http://me:p@ss@host:1/x@y") == "http://host:1/x@y"


@pytest.fixture
def secret_url(monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"http://alice:s3cr3t-pw@127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("OCTEL_OPENCODE_URL", url)
    return url


def test_doctor_names_the_server_without_its_credentials(octel: Octel, secret_url: str) -> None:
    for args in (("doctor",), ("doctor", "--json")):
        r = octel(*args)
        assert "s3cr3t-pw" not in r.stdout + r.stderr and "alice" not in r.stdout + r.stderr
    checks = {c["name"]: c for c in json.loads(octel("doctor", "--json").stdout)["checks"]}
    assert secret_url.split("@")[1] in checks["opencode server"]["detail"]


def test_watch_logs_the_server_without_its_credentials(octel: Octel, secret_url: str) -> None:
    r = octel("watch", "--server", secret_url, "--for", "1.5")
    said = r.stdout + r.stderr
    assert secret_url.split("@")[1] in said  # it does name the server
    assert "s3cr3t-pw" not in said and "alice" not in said
