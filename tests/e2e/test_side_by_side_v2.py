"""One `octel watch` follows a real `opencode serve` 1.18.33 and an OpenCode 2 server (the
project's fake, from the contract) side by side: each tree is archived in its own generation's
shape, each server's live rows are its own and name its generation and version, and the 2.x one
needs its password (given per server) while the 1.x one takes none."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest
from driver import idle, start
from fakellm import FakeLLM
from opencode_harness import OpenCode
from pydantic import SecretStr
from sqlmodel import select

sys.path.insert(0, str(Path(__file__).parent.parent / "opencode2"))

from fake_server import serve
from scenarios import subagent_tree
from watch_v2 import new_store, until, watching

from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveSession

pytestmark = pytest.mark.opencode


def test_one_watch_follows_a_1_18_and_a_2_x_server(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.load({"title": "Hello", "turns": [{"text": "Hello from 1.18."}]})
    with serve() as oc2:
        store = new_store(
            tmp_path / "data",
            opencode_passwords=SecretStr(json.dumps({oc2.url: oc2.password})),
            redact_values="",
        )
        with (
            watching(store, opencode.url, oc2.url) as st,
            httpx.Client(base_url=opencode.url, timeout=15) as http,
        ):
            until(lambda: oc2._subs, what="the watcher on /api/event")
            classic = start(http, "Say hello.")
            ids = subagent_tree(oc2)
            idle(http, classic, timeout=90)
            rows = until(
                lambda: {classic, *ids.values()} <= set(got := st.indexed()) and got,
                timeout=60,
                what="both archived",
            )
            with session_scope(st.engine, write=False) as db:
                live = {r.session_id: r for r in db.exec(select(LiveSession))}
            servers = {sid: r.server for sid, r in live.items()}
    assert rows[classic].opencode_version == "1.18.33" and rows[classic].schema_version == 3
    assert rows[ids["root"]].opencode_version == oc2.version and rows[ids["root"]].schema_version == 4
    assert servers[classic] == opencode.url.rstrip("/") and servers[ids["root"]] == oc2.url
    # each live row names what its own server runs
    assert (live[classic].generation, live[classic].server_version) == (1, "1.18.33")
    assert (live[ids["root"]].generation, live[ids["root"]].server_version) == (2, oc2.version)
    assert not [m for m in st.logs if "authentication failed" in m]
