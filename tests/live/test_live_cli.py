"""`octel sessions list --live`, `sessions show|tree` and `octel why` on live rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

from live_seed import seed_waiting_tree
from typer.testing import CliRunner

from cli import app


def _octel(url: str, *args: str) -> tuple[int, str, str]:
    r = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"}).invoke(app, ["--database-url", url, *args])
    return r.exit_code, r.stdout, r.stderr


def test_live_list_show_tree_and_why(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'octel.db'}"
    child, ids = seed_waiting_tree(url)
    code, out, _ = _octel(url, "sessions", "list", "--live", "--state", "waiting_permission", "--json")
    page = json.loads(out)
    assert code == 0 and [i["session_id"] for i in page["items"]] == [child]
    assert page["counts"]["waiting_permission"] == 1 and page["counts"]["idle"] == len(ids) - 1
    code, out, _ = _octel(url, "sessions", "list", "--live")
    assert code == 0 and out.index(child) < min(out.index(s) for s in ids if s != child), "asks first"
    code, out, _ = _octel(url, "why", child)
    assert code == 0, out
    assert re.search(r"waiting (9m \d+s|10m( \d+s)?) on a bash ask \(`git push \*`\), no reply", out), out
    assert "cycle impl-2003 of driver implementer" in out
    code, out, _ = _octel(url, "why", child, "--json")
    got = json.loads(out)
    assert got["code"] == "running" and got["live"]["ask"]["patterns"] == ["git push *"]
    code, out, _ = _octel(url, "sessions", "show", child, "--json")
    shown = json.loads(out)
    assert code == 0 and shown["live"]["state"] == "waiting_permission"
    said = [p.get("text") for m in shown["messages"]["items"] for p in m["parts"] if p["type"] == "text"]
    assert said[0] == "Explore the repo and delegate the README check."  # the messages so far
    assert "Child: explored; README checked by my subagent." in said
    code, out, _ = _octel(url, "sessions", "show", child)
    assert code == 0 and "messages so far" in out and "Child here, listing files." in out
    assert "[bash" in out and "[task" in out  # tool calls said by name
    code, out, _ = _octel(url, "sessions", "tree", child, "--json")
    tree = [{"depth": n["depth"], **n["session"]} for n in json.loads(out)["tree"]]
    assert code == 0 and {s["session_id"] for s in tree} == set(ids)
    depths = {s["session_id"]: s["depth"] for s in tree}
    assert tree[0]["session_id"] == ids[0] and depths[ids[0]] == 0 and depths[child] == 1
    assert sorted(depths.values()) == [0, 1, 2]  # root, its subagent, and the subagent's own


def test_a_bad_state_is_refused_with_the_choices(tmp_path: Path) -> None:
    code, _, err = _octel(f"sqlite:///{tmp_path / 'o.db'}", "sessions", "list", "--live", "--state", "stuck")
    assert code == 2 and "waiting_permission" in err
