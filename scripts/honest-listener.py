#!/usr/bin/env python3
"""Play one dialogue reply by reply against `empathy-gym serve-env`, seeing only what the person says.

For frozen honest sets (tests/data/honest-listener*/): the listener reads the user's words and
nothing of the reward, the emotion or the appraisal, which the server also answers with.

    python3 scripts/honest-listener.py start PROFILE SEED      # prints the episode id, then the opening
    python3 scripts/honest-listener.py say EPISODE_ID "reply"  # prints what the person says back

`--url` (default http://127.0.0.1:8700) names the server; episodes are at moderate difficulty.
Standard library only.
"""

import argparse
import json
import sys
import urllib.error
import urllib.request


def call(url, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        sys.exit(f"the server refused: {e.code} {e.read().decode(errors='replace')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8700")
    sub = ap.add_subparsers(dest="cmd", required=True)
    start = sub.add_parser("start", help="begin a dialogue with a held-out user")
    start.add_argument("profile", help="scenario:persona, e.g. grief-dog-old-age:frank")
    start.add_argument("seed", type=int)
    say = sub.add_parser("say", help="send the listener's next reply")
    say.add_argument("episode")
    say.add_argument("reply")
    a = ap.parse_args()
    if a.cmd == "start":
        got = call(a.url, "POST", "/v1/episodes",
                   {"profile": a.profile, "seed": a.seed, "difficulty": "moderate",
                    "policy": "honest-listener"})
        print(f"episode {got['episode_id']}")
        print(f"person: {got['observation']['text']}")
    else:
        got = call(a.url, "POST", f"/v1/episodes/{a.episode}/step", {"reply": a.reply})
        print(f"person: {got['observation']['text']}")
        if got["terminated"] or got["truncated"]:
            print("(the conversation is over)")


if __name__ == "__main__":
    main()
