"""`python -m telemetry.cli` runs the `octel` command line."""

from telemetry.cli import main

main()
