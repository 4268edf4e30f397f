"""`python -m cli` runs the `octel` command line."""

from cli import main

main()
