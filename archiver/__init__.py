"""octel archiver: OpenCode session trees to redacted, versioned archive files.

- ``client``, ``http``: the OpenCode client, one adapter per API generation, retries;
- ``tree``, ``walk``: breadth-first walk of a session tree (pure plan + concurrent fetch);
- ``rules``, ``redact``: secret rules and redaction of the serialised JSON;
- ``metrics``, ``document``: per-turn metrics, totals, subtree rollups, detector findings;
- ``files``, ``archive``, ``record``: atomic archive files (v2 written, v1 and v2 read), the
  archive run, and the index record of each session;
- ``recorder``, ``watch``: what a watcher records from ``/event`` and the watch loop;
- ``convert``: OpenCode JSON to the detectors' normalised stream.

Failures are described once in ``archiver.errors``.
"""
