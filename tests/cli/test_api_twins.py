"""Every query command with an HTTP twin prints, with `--json`, what the API answers on the same
store: `TWINS` is the one table of pairs, and a command given `--json` later must be entered
there or in `NO_TWIN` (with the reason it has none).

The store is seeded once per test with the fleet of `storeseed` (sessions, findings, cycles,
Claude runs), the live subagent tree of `live_seed` (waiting on an ask), an alert delivery and a
watch action. The only differences forgiven are named in `Twin.normalise`, each with its reason.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
import typer.main
from fastapi.testclient import TestClient
from octelrun import Octel
from sqlalchemy.engine import Engine
from storeseed import T0, add, seed_fleet, session
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent.parent))  # live_seed
from live_seed import store_waiting_tree, waiting_root

import cli
from telemetry.settings import Settings
from telemetry.store.action_models import WatchAction
from telemetry.store.alert_models import AlertDelivery
from telemetry.store.models import Daemon
from telemetry.timeutil import utcnow
from web.app import create_app

Json = Any
Norm = Callable[[Json], Json]


def _drop(*keys: str) -> Norm:
    """Remove `keys` wherever they occur (any depth)."""

    def walk(v: Json) -> Json:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items() if k not in keys}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk


# Named normalisations, each for a reason that is not a difference of the two answers:
# a field measured against "now", which the CLI and the API read a few milliseconds apart.
SINCE_NOW = _drop("elapsed_s")  # an open cycle's age
_AGES = _drop("state_age_s", "inactive_s", "waited_s")
_AGE_TEXT = re.compile(r"\b\d+[dhms](?: \d+[hms])?\b")  # as `age_text` writes it: 10m, 10m 1s


def _live_ages(v: Json) -> Json:
    """A live row's age, its ask's, and the ages its `explanation` says ("idle for 10m 1s")."""

    def walk(x: Json) -> Json:
        if isinstance(x, dict):
            return {k: _AGE_TEXT.sub("<age>", y) if k == "explanation" else walk(y) for k, y in x.items()}
        if isinstance(x, list):
            return [walk(y) for y in x]
        return x

    return walk(_AGES(v))


LIVE_AGES: Norm = _live_ages


SUMMARY_WINDOW = _drop("since")  # `--since 24h` and `hours=24` both start 24 h before their now
QUOTAS_AT = _drop("at")  # the time the forecast is made for


COSTS_WINDOW_NOW = _drop("since", "until")  # a window ending now: each side's now


@dataclass(frozen=True)
class Twin:
    command: str  # the command's name, as `octel --help` lists it
    args: tuple[str, ...]  # its arguments and options (`--json` is added)
    api: str  # the route and query answering the same question
    normalise: tuple[Norm, ...] = ()
    # more of the answer the API serves at other routes: (key, route) merged into its answer
    extra: tuple[tuple[str, str], ...] = ()


V1 = Path(__file__).parent.parent / "archiver" / "fixtures" / "v1_session.json"
V1_ID = str(orjson.loads(V1.read_bytes())["session_id"])
LIVE_ROOT = waiting_root()
_TREE = orjson.loads((Path(__file__).parent.parent / "fixtures/opencode/subagent_tree.json").read_bytes())
LIVE_CHILD = next(s["id"] for s in _TREE["sessions"] if s.get("parentID") == LIVE_ROOT)
W0, W1 = (T0 - timedelta(days=1)).isoformat(), (T0 + timedelta(days=2)).isoformat()
W0Q, W1Q = W0.replace("+", "%2B"), W1.replace("+", "%2B")

TWINS: tuple[Twin, ...] = (
    Twin("sessions list", ("sessions", "list"), "/api/sessions"),
    Twin(
        "sessions list",
        ("sessions", "list", "--roots", "--limit", "2"),
        "/api/sessions?root_only=true&limit=2",
    ),
    Twin("sessions list", ("sessions", "list", "--verdict", "stuck"), "/api/sessions?verdict=stuck"),
    Twin("sessions list", ("sessions", "list", "--live"), "/api/live", (LIVE_AGES,)),
    Twin(
        "sessions list",
        ("sessions", "list", "--live", "--state", "waiting_permission"),
        "/api/live?state=waiting_permission",
        (LIVE_AGES,),
    ),
    Twin("sessions show", ("sessions", "show", "ses_child_a"), "/api/sessions/ses_child_a"),
    Twin("sessions show", ("sessions", "show", "ses_root"), "/api/sessions/ses_root"),
    Twin("sessions show", ("sessions", "show", V1_ID), f"/api/sessions/{V1_ID}"),
    Twin(
        "sessions show",
        ("sessions", "show", LIVE_ROOT),
        f"/api/live/{LIVE_ROOT}",
        (LIVE_AGES,),
        (("messages", f"/api/live/{LIVE_ROOT}/messages?offset=0&limit=200"),),
    ),
    # an archived tree has no route of its own: /api/sessions/{id} carries it in `tree`
    Twin("sessions tree", ("sessions", "tree", LIVE_ROOT), f"/api/live/{LIVE_ROOT}", (LIVE_AGES,)),
    Twin("cycles list", ("cycles", "list"), "/api/cycles", (SINCE_NOW,)),
    Twin("cycles list", ("cycles", "list", "--in-flight"), "/api/cycles?in_flight=true", (SINCE_NOW,)),
    Twin("cycles list", ("cycles", "list", "--cycle", "cyc-1"), "/api/cycles?cycle=cyc-1"),
    Twin(
        "cycles list",
        ("cycles", "list", "--driver", "review", "--finished"),
        "/api/cycles?driver=review&in_flight=false",
    ),
    Twin("cycles list", ("cycles", "list", "--limit", "1"), "/api/cycles?limit=1", (SINCE_NOW,)),
    Twin(
        "cycles summary",
        ("cycles", "summary", "--since", "24h"),
        "/api/cycles/summary?hours=24",
        (SUMMARY_WINDOW,),
    ),
    # back to the seeded fleet's day: drivers, states, outcomes and the orphaned cycle
    Twin(
        "cycles summary",
        ("cycles", "summary", "--since", "60d"),
        "/api/cycles/summary?hours=1440",
        (SUMMARY_WINDOW,),
    ),
    *(
        Twin(
            "costs",
            ("costs", "--by", key, "--since", W0, "--until", W1, "--top", "3"),
            f"/api/costs?by={key}&since={W0Q}&until={W1Q}&top=3",
        )
        for key in ("agent", "model", "driver", "day")
    ),
    # every grouping, the daily chart by model, and `live`: the window reaches now
    Twin(
        "costs",
        ("costs", "--by", "agent,model,driver,day", "--top", "10", "--stack", "model"),
        "/api/costs?stack=model",
        (COSTS_WINDOW_NOW,),
    ),
    Twin("quotas", ("quotas",), "/api/quotas", (QUOTAS_AT,)),
    Twin("search", ("search", "tool:bash ls"), "/api/search?q=tool%3Abash%20ls"),
    Twin("search", ("search", "NOTES*", "--limit", "1"), "/api/search?q=NOTES%2A&limit=1"),
    Twin("search", ("search", V1_ID), f"/api/search?q={V1_ID}"),
    Twin("asks list", ("asks", "list"), "/api/v1/asks", (LIVE_AGES,)),
    Twin("alerts list", ("alerts", "list"), "/api/v1/alerts"),
    Twin(
        "alerts list",
        ("alerts", "list", "--session", "ses_root", "--since", "1h"),
        "/api/v1/alerts?session_id=ses_root&since=1h",
    ),
    Twin("actions list", ("actions", "list"), "/api/v1/actions"),
    Twin("actions list", ("actions", "list", "--session", "ses_root"), "/api/v1/actions?session_id=ses_root"),
)

# `--json` commands with no HTTP twin, and why.
NO_TWIN: dict[str, str] = {
    "runs list": "no GET route lists Claude CLI runs (the web does not import list_runs)",
    "why": "no route answers it: the web does not import the why query",
    "doctor": "checks of this machine's install, not of the store (/api/health is the fleet's)",
    "lost": "no route answers it: the web does not import the lost query",
    "detect": "runs the detectors over a corpus, a computation and not a query of the store",
    "archive": "a write: archives a tree",
    "import archives": "a write",
    "import claude": "a write",
    "import dispatch-db": "a write",
    "archives export": "writes files",
    "export otel": "sends spans",
    "prune": "a write",
    "janitor": "deletes on an OpenCode server",
    "db reindex": "a write",
    "runs add": "a write; POST /api/v1/agent-runs records a run too (this table pairs reads)",
    "asks reply": "a write; POST /api/v1/asks/{id}/reply calls the same reply_to_ask",
    "watch": "a stream of state changes, one JSON line each",
}


def _json_commands() -> set[str]:
    """Every command (as `group sub`) that takes `--json`."""
    cli._load_all()

    def walk(c: Any, path: list[str]) -> Iterator[str]:
        if hasattr(c, "commands"):
            for name, sub in c.commands.items():
                yield from walk(sub, [*path, name])
        elif any("--json" in p.opts for p in c.params):
            yield " ".join(path)

    return set(walk(typer.main.get_command(cli.app), []))


def test_every_json_command_is_a_twin_or_says_why_not() -> None:
    known = {t.command for t in TWINS} | set(NO_TWIN)
    assert _json_commands() - known == set(), "enter the new --json command in TWINS or NO_TWIN"
    assert known - _json_commands() == set(), "TWINS or NO_TWIN names a command that takes no --json"


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that ran and is gone (reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def octel(tmp_path: Path, engine: Engine, store_url: str) -> Octel:
    """`octel` on the store of `engine`: SQLite, and PostgreSQL where the tests have it."""
    (tmp_path / "data").mkdir()
    return Octel(tmp_path / "data", store_url, engine, CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}))


@pytest.fixture
def store(octel: Octel, dead_pid: int, tmp_path: Path) -> Octel:
    # an imported archive: a session with its per-turn rows and text to search
    (tmp_path / "old").mkdir()
    shutil.copy(V1, tmp_path / "old" / V1.name)
    imported = octel("import", "archives", str(tmp_path / "old"))
    assert imported.exit_code == 0, imported.output + imported.stderr
    seed_fleet(octel.engine)
    now = utcnow()
    ago = now - timedelta(minutes=5)
    host = socket.gethostname()
    add(
        octel.engine,
        # a live subagent archived at a quiet moment earlier: its live row says `archived`
        session(LIVE_CHILD, root_session_id=LIVE_ROOT, parent_session_id=LIVE_ROOT, agent="explore"),
        # its process is gone: cyc-3, left open by this daemon, is orphaned
        Daemon(
            driver="implementer",
            host=host,
            pid=dead_pid,
            last_heartbeat_at=ago,
            first_seen_at=ago,
            in_flight_cycle_id="cyc-3",
        ),
        AlertDelivery(
            sent_at=ago,
            alert_key="stuck:ses_child_a:doom_loop",
            kind="stuck",
            severity="warning",
            state="firing",
            channel="webhook_json",
            outcome="sent",
            status_code=200,
            attempts=1,
            summary="ses_child_a is stuck in a doom loop",
            session_id="ses_child_a",
            tree_id="ses_root",
            link="http://octel/sessions/ses_child_a",
        ),
        WatchAction(
            at=ago,
            server="http://oc:4096",
            session_id="ses_child_a",
            root_session_id="ses_root",
            rule="doom_loop",
            action="abort",
            outcome="done",
            detail="aborted after a doom loop",
            evidence={"detector": "doom_loop", "turns": [4, 5, 6]},
            answer_status=200,
            watcher="w1",
        ),
    )
    store_waiting_tree(octel.engine)
    return octel


@pytest.fixture
def api(store: Octel) -> Iterator[TestClient]:
    settings = Settings(data_dir=store.data_dir, database_url=store.url, _env_file=None)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as c:
        yield c


def _where(a: Json, b: Json, at: str = "") -> list[str]:
    """The paths at which two JSON values differ, with both values (for a readable failure)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(a.keys() | b.keys()) for p in _where(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _where(x, y, f"{at}[{i}]")]
    return [] if a == b else [f"{at or '.'}: cli {a!r} api {b!r}"]


def _get(api: TestClient, route: str) -> Json:
    got = api.get(route)
    assert got.status_code == 200, (route, got.text)
    return got.json()


def _norm(twin: Twin, v: Json) -> Json:
    for n in twin.normalise:
        v = n(v)
    return v


def test_json_equals_the_api_answer(store: Octel, api: TestClient) -> None:
    """All pairs on one store (seeding it is most of the cost): each difference is reported."""
    differ: list[str] = []
    for twin in TWINS:
        # the command first: `octel search` indexes what is queued (no server may be running
        # to have done it), then the API reads the same index
        printed = store.json(*twin.args)
        answer = _get(api, twin.api)
        answer.update({key: _get(api, route) for key, route in twin.extra})
        if _norm(twin, printed) != _norm(twin, answer):
            differ.append(
                f"{' '.join(twin.args)} != {twin.api}: {_where(_norm(twin, printed), _norm(twin, answer))}"
            )
    assert not differ, "\n".join(differ)


def test_the_store_is_representative(store: Octel, api: TestClient) -> None:
    """The pairs compare something: rows in every answer the seed can fill."""
    assert len(api.get("/api/sessions").json()["items"]) >= 5
    assert api.get("/api/live").json()["items"]
    assert api.get("/api/v1/asks").json()["items"]
    assert api.get("/api/v1/alerts").json()["items"]
    assert api.get("/api/v1/actions?session_id=ses_root").json()["items"]
    assert api.get("/api/v1/alerts?session_id=ses_root&since=1h").json()["items"]
    assert api.get("/api/live?state=waiting_permission").json()["items"]
    assert any(c["orphaned"] for c in api.get("/api/cycles").json()["items"])
    assert api.get("/api/costs").json()["live"]["sessions"]
    costs = api.get(f"/api/costs?since={W0Q}&until={W1Q}&top=3").json()
    assert all(costs["breakdowns"].values()) and costs["top_sessions"] and costs["top_trees"]
    assert api.get("/api/sessions/ses_root").json()["tree"]
    assert api.get(f"/api/sessions/{V1_ID}").json()["per_turn"]
    hits = api.get("/api/search?q=tool%3Abash%20ls").json()["hits"]
    assert hits and all(h["at"].endswith("Z") for h in hits), "a hit's time is UTC on every engine"
    assert any(n["session"]["archived"] for n in api.get(f"/api/live/{LIVE_ROOT}").json()["tree"])
