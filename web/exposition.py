"""The store's metric families in Prometheus' classic text format (0.0.4), written directly.

prometheus-client's `generate_latest` builds a sample object per line and checks every metric
and label name against the legacy pattern as it writes: a tenth of a scrape's time when the
store holds a thousand series. The catalogue's names are checked once, by its tests, so this
writes the same bytes without the per-line work (a property test holds the two byte-equal).
Process and request metrics still go through prometheus-client's own registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.utils import floatToGoString as _untyped_float

from telemetry.metrics.snapshot import Family, HistogramSeries

__all__ = ["render"]


def _number(d: float) -> str:
    """A sample's value as prometheus-client writes it (its own function, typed)."""
    return str(_untyped_float(d))  # type: ignore[no-untyped-call]


def _help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _value(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    # prometheus-client writes labels sorted by name, whatever their declared order
    inner = ",".join(f'{k}="{_value(v)}"' for k, v in sorted(pairs))
    return f"{{{inner}}}" if inner else ""


def render(families: Iterable[Family]) -> str:
    """Each family's HELP, TYPE and sample lines, as `generate_latest` writes them."""
    out: list[str] = []
    for f in families:
        m = f.metric
        # a counter is named without `_total` in its family and with it on every line
        name = m.name.removesuffix("_total") + "_total" if m.kind == "counter" else m.name
        out.append(f"# HELP {name} {_help(m.help)}\n# TYPE {name} {m.kind}\n")
        for s in f.series:
            pairs = list(zip(m.labels, s.labels, strict=False))
            if isinstance(s, HistogramSeries):
                for le, count in s.buckets:
                    out.append(f"{name}_bucket{_labels([*pairs, ('le', le)])} {_number(count)}\n")
                if s.buckets and float(s.buckets[0][0]) >= 0:  # as prometheus-client: no sum
                    plain = _labels(pairs)  # and count beside a negative bucket
                    out.append(f"{name}_count{plain} {_number(s.buckets[-1][1])}\n")
                    out.append(f"{name}_sum{plain} {_number(s.sum)}\n")
            else:
                out.append(f"{name}{_labels(pairs)} {_number(s.value)}\n")
    return "".join(out)
