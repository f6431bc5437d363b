#!/usr/bin/env python3
"""Runs a test program with the reference server up on 127.0.0.1, then stops the server.

    with_server.py [--feed FEED] [--secret S] PROGRAM [ARGS...]
                                          starts examples/server/cc_server.py on an ephemeral port
                                          (on FEED, default the sample feed; with S, requiring
                                          per-user tokens signed with it),
                                          runs PROGRAM with CC_SERVER_URL set and CC_ADMIN set to a
                                          command for admin calls, and exits with its status
    with_server.py --admin URL METHOD PATH [JSON]
                                          one admin call (what CC_ADMIN runs); prints the answer
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "server"))


def admin(url: str, method: str, path: str, body: str | None) -> int:
    data = body.encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        sys.stdout.write(response.read().decode())
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--admin":
        return admin(argv[1], argv[2], argv[3], argv[4] if len(argv) > 4 else None)
    from reference_server import ReferenceServer

    feed = secret = None
    while argv and argv[0] in ("--feed", "--secret"):
        if argv[0] == "--feed":
            feed = argv[1]
        else:
            secret = argv[1]
        argv = argv[2:]
    with ReferenceServer(feed, secret=secret) as server:
        env = dict(os.environ)
        env["CC_SERVER_URL"] = server.url
        env["CC_ADMIN"] = f"{sys.executable} {os.path.abspath(__file__)} --admin {server.url}"
        result = subprocess.run(argv, env=env)
        if result.returncode != 0:
            print(json.dumps(server.requests(), indent=1)[-4000:], file=sys.stderr)
        return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
