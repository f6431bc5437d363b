"""What the Python examples share: importing contentcards from a checkout when it is not
installed, the sample feed, and the controller configuration (``--server URL`` or the file)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SAMPLE_FEED = os.path.join(REPO, "examples", "data", "sample_feed.json")

try:
    import contentcards  # noqa: F401  (installed with pip)
except ImportError:  # running from a checkout: use bindings/python as it is
    sys.path.insert(0, os.path.join(REPO, "bindings", "python"))


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--server", metavar="URL",
                        help="a Content Cards server (e.g. examples/server/cc_server.py) "
                             "instead of the bundled sample feed")
    parser.add_argument("--user", default="demo-user", help="the user id (default: demo-user)")
    return parser.parse_args()


def config(args: argparse.Namespace) -> dict[str, Any]:
    """The controller's configuration: the sample feed file, or the server with events to it."""
    if args.server:
        return {"userId": args.user, "refreshTokens": 0,
                "source": {"url": args.server, "apiKey": "demo-key"},
                "events": {"url": args.server}, "eventFlushIntervalSeconds": 0}
    return {"userId": args.user, "refreshTokens": 0, "source": {"file": SAMPLE_FEED}}
