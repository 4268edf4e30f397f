"""octel's control tower: the watch loop, the live board and its states, the event mirror, live
probes and acting on servers (asks denied, sessions interrupted).

It follows OpenCode servers over HTTP and their event streams and decides what a live session
is doing; it never touches the database (the store's wiring is in `telemetry.tower`). It reads
the recorder (`archiver`: clients, the walk, conversion, redaction) and the detectors.
"""
