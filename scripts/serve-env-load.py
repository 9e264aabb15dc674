#!/usr/bin/env python3
"""Drive `empathy-gym serve-env` with many concurrent episodes (one thread each, standard library
only) and check that none is lost: every episode runs to its end, and its record (GET .../record)
holds exactly the turns, emotions and end that the steps returned. Prints episodes per second and
the p50/p99 step latency; exits 1 on any lost or inconsistent episode.

    scripts/serve-env-load.py --url http://127.0.0.1:8700 --episodes 200 --concurrency 200
"""

import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))
from empathy_env import EmpathyEnv  # noqa: E402

# Two styles of reply so the episodes end in different ways (configs/baselines: listener and
# advice-first).
LISTENER = [
    "That sounds really hard, and it makes sense that you're shaken by it. What has been the hardest part for you?",
    "It sounds like this has been weighing on you for a while. How have you been holding up?",
    "I can hear how much this matters to you. What goes through your mind when you think about it?",
    "That makes sense. What would feel most helpful to talk about right now?",
    "It sounds like part of you is carrying this alone. Who else knows how you're feeling?",
]
ADVICE = [
    "You should make a list and start fixing this tomorrow. Make sure you talk to someone about it.",
    "Try to get some sleep, drink water, and go for a walk. Have you considered therapy?",
]


def play(env, i, seed, latencies, problems, barrier, reflect):
    replies = LISTENER if i % 3 else ADVICE
    try:
        barrier.wait()
        ep = env.create(split="test" if i % 2 else "train", seed=seed + i, policy="load-test",
                        difficulty=["easy", "moderate", "hard"][i % 3])
        eid = ep["episode_id"]
        emotions = [ep["observation"]["emotion"]]
        sent = []
        out = None
        user = ep["observation"]["text"]
        while out is None or not (out["terminated"] or out["truncated"]):
            reply = replies[min(len(sent), len(replies) - 1)]
            if reflect:
                # Quote the user back, so every reply is new text the simulator must embed (a
                # fixed script would be served from the embedding cache after one round).
                reply += f' When you say "{" ".join(user.split()[:6])}", what is that like for you?'
            t0 = time.perf_counter()
            out = env.step(eid, reply)
            latencies.append(time.perf_counter() - t0)
            sent.append(reply)
            emotions.append(out["observation"]["emotion"])
            user = out["observation"]["text"]
        rec = env.record(eid)
        got_replies = [t["text"] for t in rec["turns"] if t["role"] == "assistant"]
        got_emotions = [t["emotion"] for t in rec["turns"] if t["role"] == "user"]
        if got_replies != sent or got_emotions != emotions or rec.get("end") != out["end"]:
            problems.append(f"episode {eid}: its record does not match the steps")
        if rec.get("reward") is None:
            problems.append(f"episode {eid}: its record has no reward")
        # The record is in the server's log too: free the session (finished ones count against
        # --max-sessions until they expire).
        env.delete(eid)
    except Exception as e:  # noqa: BLE001 - every failure is a lost episode
        problems.append(f"episode {i}: {e}")


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))
    return xs[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8700")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--fixed-replies", action="store_true",
                    help="send the scripts as they are (after one round every reply is cached)")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    env = EmpathyEnv(args.url, timeout=600)
    latencies, problems = [], []
    start = time.perf_counter()
    done = 0
    while done < args.episodes:
        n = min(args.concurrency, args.episodes - done)
        barrier = threading.Barrier(n)
        threads = [threading.Thread(target=play, args=(env, done + k, args.seed, latencies, problems, barrier,
                                                     not args.fixed_replies))
                   for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done += n
    wall = time.perf_counter() - start
    numbers = {
        "episodes": args.episodes,
        "concurrency": args.concurrency,
        "steps": len(latencies),
        "wall_s": round(wall, 3),
        "episodes_per_s": round(args.episodes / wall, 2),
        "step_p50_ms": round(1000 * percentile(latencies, 50), 1),
        "step_p99_ms": round(1000 * percentile(latencies, 99), 1),
        "lost": len(problems),
    }
    print(json.dumps(numbers))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=1)
    for p in problems[:20]:
        print("problem:", p, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
