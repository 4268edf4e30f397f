"""The Host check: exact names and `*.` patterns pass, everything else (rebinding names) is refused."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from web.hosts import host_allowed, host_name

labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
names = st.lists(labels, min_size=1, max_size=4).map(".".join)
ports = st.integers(1, 65535)


@given(names, ports)
def test_a_port_never_changes_the_name(name: str, port: int) -> None:
    assert host_name(f"{name}:{port}") == name
    assert host_name(f"{name.upper()}:{port}") == name


@given(names, names, st.one_of(st.none(), ports))
def test_a_wildcard_covers_subdomains_only(sub: str, domain: str, port: int | None) -> None:
    suffix = "" if port is None else f":{port}"
    assert host_allowed(f"{sub}.{domain}{suffix}", [f"*.{domain}"])
    assert not host_allowed(f"{domain}{suffix}", [f"*.{domain}"])  # the bare domain is its own name
    assert not host_allowed(f"{domain}.{sub}.evil_{suffix}", [f"*.{domain}"])  # `_` is in no generated label


@given(names, names)
def test_only_the_exact_name_passes(allowed: str, other: str) -> None:
    assert host_allowed(allowed, [allowed])
    assert host_allowed(allowed, [other]) == (allowed == other)
    assert not host_allowed(f"{allowed}.evil.example", [allowed])  # DNS rebinding


def test_ipv6_literals_keep_their_brackets() -> None:
    assert host_name("[::1]:8765") == "[::1]"
    assert host_allowed("[::1]:8765", ["[::1]"])
    assert not host_allowed("[::2]:8765", ["[::1]"])
    assert not host_allowed("", ["localhost"])


def test_a_header_that_is_not_exactly_a_host_and_port_names_no_host() -> None:
    for header in (
        "[::1]evil.example",
        "localhost:8765@evil.example",
        "localhost@evil.example",
        "localhost:8765:80",
        "localhost:99999",
        "localhost:",
        "local host",
        "evil.example/localhost",
        "[::1",
    ):
        assert host_name(header) == "", header
        assert not host_allowed(header, ["localhost", "[::1]"]), header
