"""``python -m contentcards``: the command-line tool (docs/CLI.md)."""

from .cli import run

if __name__ == "__main__":
    run()
