"""The price table and the pure readers, as properties: any split of an answer into block lines,
any running count, any cut of a file being written."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_lines import assistant, jsonl, tool_use, usage, user
from hypothesis import given
from hypothesis import strategies as st

from archiver.claude.lines import read_lines
from archiver.claude.prices import Usage, cost_of
from archiver.claude.tree import build_tree


def test_unknown_model_is_unpriced_not_free() -> None:
    assert (
        cost_of("claude-unknown-9", Usage(input=1000)) is None and cost_of("gpt-5", Usage(input=1000)) is None
    )
    assert cost_of(None, Usage(input=1000)) is None


def test_a_model_is_never_priced_by_a_prefix_of_its_name() -> None:
    """claude-opus-4-6 is $5/$25 per million, not Opus 4's $15/$75; a name no database lists is
    unpriced, not the price of the longest listed name it starts with."""
    mtok = Usage(input=1_000_000), Usage(output=1_000_000)
    assert [cost_of("claude-opus-4-6", u) for u in mtok] == [pytest.approx(5.0), pytest.approx(25.0)]
    assert [cost_of("claude-opus-4-20250514", u) for u in mtok] == [pytest.approx(15.0), pytest.approx(75.0)]
    assert cost_of("claude-opus-4-9", mtok[0]) is None


def test_date_suffix_names_the_same_model() -> None:
    u = Usage(input=1000, output=100)
    assert cost_of("claude-sonnet-4-5-20250929", u) == cost_of("claude-sonnet-4-5", u)
    assert cost_of("claude-opus-4-1-20250805", u) == cost_of("claude-opus-4-1", u)


def test_pricing_makes_no_network_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import genai_prices.data_snapshot as snap

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("pricing opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert cost_of("claude-haiku-4-5", Usage(input=123_457, output=99)) is not None
    assert snap.get_snapshot().from_auto_update is False


def test_a_user_price_file_prices_a_private_model(tmp_path: Path) -> None:
    from archiver.claude.prices import price_source, use_price_file

    f = tmp_path / "prices.json"
    f.write_text(
        '{"models": {"acme-coder-2": {"input": 2, "output": 8, "cache_read": 0.2,'
        ' "cache_write_5m": 2.5, "cache_write_1h": 4}}}'
    )
    assert cost_of("acme-coder-2", Usage(input=1_000_000)) is None
    use_price_file(f)
    try:
        assert cost_of("acme-coder-2", Usage(input=1_000_000, output=1_000_000)) == pytest.approx(10.0)
        assert price_source()["price_file"] is True
    finally:
        use_price_file(None)
    assert cost_of("acme-coder-2", Usage(input=1_000_000)) is None


def test_cache_writes_are_priced_by_how_long_they_are_kept() -> None:
    # 100k tokens: under the 200k context tier, above which Sonnet 4.5 costs more
    five = cost_of("claude-sonnet-4-5", Usage(cache_write_5m=100_000))
    hour = cost_of("claude-sonnet-4-5", Usage(cache_write_1h=100_000))
    assert (five, hour) == (pytest.approx(0.375), pytest.approx(0.6))


@given(
    st.integers(1, 6),
    st.integers(0, 10**6),
    st.integers(0, 10**5),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)
def test_an_answer_split_into_block_lines_counts_once(
    blocks: int, inp: int, out: int, read: int, write: int, hour_seed: int
) -> None:
    hour = hour_seed % (write + 1)
    parts = [{"type": "text", "text": str(i)} for i in range(blocks)]
    split = build_tree(
        "s", jsonl([user("s", "x"), *assistant("s", "m", parts, usage(inp, out, read, write, hour))])
    )
    msg = split.sessions[0].messages[1]
    t = msg["info"]["tokens"]
    assert (t["input"], t["output"], t["cache"]["read"], t["cache"]["write"]) == (inp, out, read, write)
    assert msg["info"]["cache_write_1h"] == hour and len(msg["parts"]) == blocks
    alone = cost_of("claude-sonnet-4-5", Usage(inp, out, read, write - hour, hour))
    assert msg["info"]["cost"] == pytest.approx(alone)


_tokens = st.tuples(*[st.integers(0, 10**6)] * 4)


@given(st.lists(_tokens, min_size=1, max_size=8), st.data())
def test_an_answer_counts_what_its_final_line_says_once(
    spread: list[tuple[int, ...]], data: st.DataObject
) -> None:
    """However a gateway or the CLI spreads one answer's usage over its streaming lines (the
    uncached input on the first, the cache read on the last, a running output count), the
    archive counts the usage of its final line: the one with its stop reason, else the last."""
    stop = data.draw(st.sampled_from([None, *range(len(spread))]))
    lines = []
    for i, (inp, out, read, write) in enumerate(spread):
        (line,) = assistant("s", "m", [{"type": "text", "text": str(i)}], usage(inp, out, read, write))
        if i == stop:
            line["message"]["stop_reason"] = "end_turn"
        lines.append(line)
    msg = build_tree("s", jsonl([user("s", "x"), *lines])).sessions[0].messages[1]
    inp, out, read, write = spread[len(spread) - 1 if stop is None else stop]
    t = msg["info"]["tokens"]
    assert (t["input"], t["output"], t["cache"]["read"], t["cache"]["write"]) == (inp, out, read, write)
    assert msg["info"]["cost"] == pytest.approx(cost_of("claude-sonnet-4-5", Usage(inp, out, read, write)))


@given(st.lists(st.text(max_size=30), min_size=1, max_size=6), st.data())
def test_any_cut_of_a_file_being_written_reads_a_prefix(texts: list[str], data: st.DataObject) -> None:
    whole = jsonl([user("s", t) for t in texts])
    cut = data.draw(st.integers(0, len(whole)))
    full = read_lines(whole).objects
    part = read_lines(whole[:cut])
    assert part.objects == full[: len(part.objects)]
    assert part.consumed <= cut
    assert all(e.error_kind == "truncated" for e in part.errors) and len(part.errors) <= 1
    rest = read_lines(whole[part.consumed :])  # the next incremental read starts where this one stopped
    assert part.objects + rest.objects == full


@given(st.lists(st.integers(-1, 7), max_size=8))
def test_any_subagent_graph_becomes_a_tree(parents: list[int]) -> None:
    """Subagent i is launched by a call in subagent parents[i] (-1: the root, a missing index or
    itself: a call nobody made). Every file is placed once, parents before children, depth one
    below its parent, and usage is never counted twice."""
    from archiver.claude.tree import SubagentFile

    def launch(i: int) -> list[dict[str, object]]:
        return assistant(
            "s", f"launch-{i}", [tool_use(f"call-{i}", "Agent", prompt=f"job {i}")], usage(10, 1)
        )

    root = [user("s", "go"), *[x for i, p in enumerate(parents) if p == -1 for x in launch(i)]]
    subs = []
    for i in range(len(parents)):
        lines = [user("s", f"job {i}", agentId=f"a{i}")]
        lines += [x for j, p in enumerate(parents) if p == i and j != i for x in launch(j)]
        meta = b'{"toolUseId": "call-%d", "agentType": "general-purpose"}' % i
        subs.append(SubagentFile(f"agent-a{i}.jsonl", f"a{i}", jsonl(lines), meta))
    tree = build_tree("s", jsonl(root), subs)
    ids = [s.session_id for s in tree.sessions]
    assert len(ids) == len(set(ids)) == len(parents) + 1
    depth = {s.session_id: s.depth for s in tree.sessions}
    seen: set[str] = set()
    for s in tree.sessions:
        if s.parent_id is not None:
            assert s.parent_id in seen and s.depth == depth[s.parent_id] + 1
        seen.add(s.session_id)
    launched = sum(1 for i, p in enumerate(parents) if p == -1 or (0 <= p < len(parents) and p != i))
    total = sum(m["info"].get("tokens", {}).get("input", 0) for s in tree.sessions for m in s.messages)
    assert total == 10 * launched


@given(
    st.sampled_from(["claude-opus-4-6", "claude-haiku-4-5", "claude-sonnet-4-5"]),
    _tokens,
    st.integers(0, 10**6),
)
def test_the_fast_path_prices_as_genai_prices_does(model: str, t: tuple[int, ...], hour: int) -> None:
    """One price per token kind (or per context tier), read once per model and day, gives what
    genai-prices' calc_price gives for the same tokens."""
    from archiver.claude.prices import _calc

    u = Usage(*t, cache_write_1h=hour)
    at = 1_796_000_000_000  # 2026-12
    expected = _calc(model, u, "2026-12-01")
    assert cost_of(model, u, at_ms=at) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("context", [199_999, 200_000, 200_001, 1_000_000])
def test_a_tiered_price_changes_past_its_tier_for_every_token(context: int) -> None:
    """Claude Sonnet 4.5 costs more per token, every token of the message, once its context
    (input with cache reads and writes) passes 200,000 tokens: as genai-prices reckons it."""
    from archiver.claude.prices import _calc

    u = Usage(input=context - 150_000, output=2_000, cache_read=100_000, cache_write_5m=50_000)
    expected = _calc("claude-sonnet-4-5", u, "2026-12-01")
    got = cost_of("claude-sonnet-4-5", u, at_ms=1_796_000_000_000)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    base = (u.input * 3 + u.output * 15 + u.cache_read * 0.3 + u.cache_write_5m * 3.75) / 1e6
    assert got == pytest.approx(base if context <= 200_000 else 2 * base - u.output * 7.5 / 1e6)
