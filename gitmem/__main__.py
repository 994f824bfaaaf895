"""Run the CLI with ``python -m gitmem``."""

from gitmem.cli import main

main()
