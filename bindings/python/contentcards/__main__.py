"""``python -m contentcards``: runs the command-line program (docs/CLI.md; see cli.py)."""

from .cli import run

if __name__ == "__main__":
    run()
