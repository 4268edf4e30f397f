"""A counter's labels are stored as one key: sorted JSON, the same text whether or not it was cached."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from telemetry.store.aggregates import labels_key

_VALUES = st.one_of(st.text(max_size=8), st.integers(), st.sampled_from(["claude_code", "", "ø"]))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["agent", "model", "source", "kind", "é"]), _VALUES))
def test_labels_key_is_sorted_compact_json_of_the_values_as_text(labels: dict[str, object]) -> None:
    want = json.dumps({k: str(v) for k, v in labels.items()}, sort_keys=True, separators=(",", ":"))
    assert labels_key(labels) == want  # type: ignore[arg-type]
    assert labels_key(dict(reversed(list(labels.items())))) == want  # type: ignore[arg-type]
