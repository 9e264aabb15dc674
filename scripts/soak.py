#!/usr/bin/env python3
"""Soak tests of both servers (docs/SERVE.md, "Limits"); python3 standard library only.

serve-env: for --minutes, client threads create episodes well past --max-sessions (429s are
expected and counted), abandon half of them after 0-2 steps (the TTL must reclaim them) and play
the rest to the end with replies that are new each time (so the embedding cache fills to its
bound). Every 5 s the sampler reads /v1/health and the server's resident memory. At the end the
server is stopped with SIGTERM and the log is checked: every episode a client saw finish is in it
exactly once.

serve-model: a flood of concurrent chat requests against a bounded queue (--max-queue); some
clients hang up early. Sampled the same way: RSS, queue, answered and refused counts.

Writes DIR/env.csv, DIR/model.csv (the samples) and DIR/soak.json (the verdicts and counts), and
prints a summary. Exits non-zero when a check fails.

    python3 scripts/soak.py --bin target/release/empathy-gym --minutes 10 --out results/reliability/soak
"""

import argparse
import csv
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

REPLIES = [
    "That sounds really hard. What happened next?",
    "I'm sorry you're dealing with this. How are you holding up?",
    "It makes sense that you feel worn out after all of that.",
    "What has been the hardest part for you so far?",
    "You have been carrying a lot on your own.",
    "Who do you have around you right now?",
]


def start(cmd):
    """Starts a server on port 0; returns (process, host, port) from its first stdout line."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    url = next((w for w in line.split() if w.startswith("http://")), None)
    if not url:
        p.kill()
        sys.exit(f"no address on the first line: {line!r}\n{p.stderr.read()}")
    host, port = url[len("http://"):].rsplit(":", 1)
    threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
    return p, host, int(port)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Client:
    """One keep-alive connection; reconnects after an error."""

    def __init__(self, host, port, timeout=120):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = None

    def call(self, method, path, body=None):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                data = json.dumps(body).encode() if body is not None else None
                headers = {"Content-Type": "application/json"} if data is not None else {}
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                raw = r.read()
                return r.status, json.loads(raw) if raw else {}
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt == 1:
                    raise
        raise RuntimeError("unreachable")


def sampler(host, port, pid, stop, rows, started, extra):
    c = Client(host, port)
    while not stop.is_set():
        try:
            _, h = c.call("GET", "/v1/health")
        except OSError:
            h = {}
        row = {"t_s": round(time.time() - started, 1), "rss_mib": round(rss_mib(pid), 1)}
        row.update({k: h.get(k) for k in extra})
        rows.append(row)
        stop.wait(5)


def drive(p, host, port, started, rows, worker, n, health_fields):
    """Runs n client threads and the sampler until the clients stop, then stops the server with
    SIGTERM; returns its shutdown summary (stdout) and exit status."""
    stop = threading.Event()
    samp = threading.Thread(target=sampler, args=(host, port, p.pid, stop, rows, started, health_fields))
    samp.start()
    workers = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    samp.join()
    p.send_signal(signal.SIGTERM)
    summary = p.stdout.read()
    return summary, p.wait()


def level_off(rows):
    """RSS growth from the middle third to the last third of the run, in percent."""
    n = len(rows)
    if n < 6:
        return None
    mid = [r["rss_mib"] for r in rows[n // 3: 2 * n // 3]]
    last = [r["rss_mib"] for r in rows[2 * n // 3:]]
    a, b = sum(mid) / len(mid), sum(last) / len(last)
    return round(100 * (b - a) / a, 1)


def soak_env(args, out):
    log = os.path.join(out, "env-episodes.jsonl")
    if os.path.exists(log):
        os.remove(log)
    cmd = [args.bin, "serve-env", "--port", "0", "--out", log, "--max-sessions",
           str(args.max_sessions), "--ttl-s", str(args.ttl_s), "--embed-cache",
           str(args.embed_cache), "--seed", "11"]
    p, host, port = start(cmd)
    started = time.time()
    deadline = started + 60 * args.minutes
    rows = []
    counts = {"creates": 0, "full_429": 0, "abandoned": 0, "finished": 0, "other_errors": 0,
              "expired_404": 0}
    finished_ids = []
    lock = threading.Lock()
    unique = [0]

    def reply():
        with lock:
            unique[0] += 1
            n = unique[0]
        return f"{random.choice(REPLIES)} ({n})"

    def worker(k):
        rnd = random.Random(k)
        c = Client(host, port)
        while time.time() < deadline:
            s, v = c.call("POST", "/v1/episodes", {"split": rnd.choice(["train", "test"])})
            if s == 429:
                with lock:
                    counts["full_429"] += 1
                time.sleep(0.2)
                continue
            if s != 201:
                with lock:
                    counts["other_errors"] += 1
                continue
            with lock:
                counts["creates"] += 1
            eid = v["episode_id"]
            abandon = rnd.random() < 0.5
            steps = rnd.randint(0, 2) if abandon else 100
            for _ in range(steps):
                s, st = c.call("POST", f"/v1/episodes/{eid}/step", {"reply": reply()})
                if s == 404:
                    with lock:
                        counts["expired_404"] += 1
                    break
                if s != 200:
                    with lock:
                        counts["other_errors"] += 1
                    break
                if st["terminated"] or st["truncated"]:
                    with lock:
                        counts["finished"] += 1
                        finished_ids.append(eid)
                    break
            else:
                if abandon:
                    with lock:
                        counts["abandoned"] += 1

    summary, rc = drive(p, host, port, started, rows, worker, args.clients,
                        ["sessions", "max_sessions", "finished", "status"])
    with open(log) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    samples = [r["sample"] for r in lines]
    max_seen = max((r["sessions"] or 0) for r in rows)
    checks = {
        "sessions_never_over_the_bound": max_seen <= args.max_sessions,
        "creates_at_least_5x_max_sessions": counts["creates"] >= 5 * args.max_sessions,
        "every_finished_episode_in_the_log_once": len(samples) == len(set(samples)) == counts["finished"],
        "no_unexpected_errors": counts["other_errors"] == 0,
        "clean_shutdown": rc == 0,
    }
    growth = level_off(rows)
    checks["rss_levels_off_within_10_percent"] = growth is not None and growth < 10
    write_csv(os.path.join(out, "env.csv"), rows)
    os.remove(log)  # the log is checked here; thousands of episodes are not a curated result
    return {"command": " ".join(cmd), "counts": counts, "log_lines": len(lines),
            "max_sessions_seen": max_seen, "rss_first_mib": rows[0]["rss_mib"],
            "rss_peak_mib": max(r["rss_mib"] for r in rows), "rss_last_mib": rows[-1]["rss_mib"],
            "rss_growth_mid_to_last_third_pct": growth, "summary": summary.strip(),
            "checks": checks}


def soak_model(args, out):
    cmd = [args.bin, "serve-model", "--port", "0", "--max-queue", str(args.max_queue),
           "--max-batch", "8", "--max-tokens", "48", "--request-timeout-s", "120"]
    if args.model:
        cmd += ["--model", args.model]
    p, host, port = start(cmd)
    started = time.time()
    deadline = started + 60 * args.minutes
    rows = []
    counts = {"answered": 0, "refused_429": 0, "hung_up": 0, "other_errors": 0,
              "retry_after_missing": 0}
    lock = threading.Lock()

    def worker(k):
        rnd = random.Random(k)
        n = 0
        while time.time() < deadline:
            n += 1
            body = json.dumps({"model": "m", "max_tokens": rnd.choice([8, 24, 48]), "seed": n,
                               "messages": [{"role": "user", "content": f"Tell me about day {n} of {k}."}]})
            hang_up = rnd.random() < 0.1
            conn = http.client.HTTPConnection(host, port, timeout=0.3 if hang_up else 120)
            try:
                conn.request("POST", "/v1/chat/completions", body=body,
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                with lock:
                    if r.status == 200:
                        counts["answered"] += 1
                    elif r.status == 429:
                        counts["refused_429"] += 1
                        if r.getheader("Retry-After") is None:
                            counts["retry_after_missing"] += 1
                    else:
                        counts["other_errors"] += 1
                if r.status == 429:
                    time.sleep(0.05)
            except OSError:
                with lock:
                    counts["hung_up" if hang_up else "other_errors"] += 1
            finally:
                conn.close()

    summary, rc = drive(p, host, port, started, rows, worker, args.flood,
                        ["requests", "abandoned", "refused", "queue_free", "max_queue"])
    growth = level_off(rows)
    checks = {
        "queue_never_over_the_bound": all((r["queue_free"] or 0) >= 0 for r in rows),
        "flood_was_refused_with_429": counts["refused_429"] > 0,
        "every_429_has_retry_after": counts["retry_after_missing"] == 0,
        "no_unexpected_errors": counts["other_errors"] == 0,
        "rss_levels_off_within_10_percent": growth is not None and growth < 10,
        "clean_shutdown": rc == 0,
    }
    write_csv(os.path.join(out, "model.csv"), rows)
    return {"command": " ".join(cmd), "counts": counts, "rss_first_mib": rows[0]["rss_mib"],
            "rss_peak_mib": max(r["rss_mib"] for r in rows), "rss_last_mib": rows[-1]["rss_mib"],
            "rss_growth_mid_to_last_third_pct": growth, "summary": summary.strip(),
            "checks": checks}


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/empathy-gym")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--out", default="results/reliability/soak")
    ap.add_argument("--only", choices=["env", "model"])
    ap.add_argument("--max-sessions", type=int, default=16)
    ap.add_argument("--ttl-s", type=int, default=15)
    ap.add_argument("--embed-cache", type=int, default=4096)
    ap.add_argument("--clients", type=int, default=24)
    ap.add_argument("--model", help="serve-model's --model (default: its default, SmolLM2-135M-Instruct)")
    ap.add_argument("--max-queue", type=int, default=16)
    ap.add_argument("--flood", type=int, default=64)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "soak.json")
    result = json.load(open(path)) if os.path.exists(path) else {}
    result["budget"] = {"minutes_per_server": args.minutes, "cores": os.cpu_count()}
    for name, run in [("serve_env", soak_env), ("serve_model", soak_model)]:
        if args.only and not name.endswith(args.only):
            continue
        print(f"soak: {name} for {args.minutes} min", flush=True)
        result[name] = run(args, args.out)
        with open(path, "w") as f:
            json.dump(result, f, indent=2)
        for check, ok in result[name]["checks"].items():
            print(f"  {'ok  ' if ok else 'FAIL'} {check}")
        print(f"  counts: {result[name]['counts']}")
        print(f"  rss: {result[name]['rss_first_mib']} -> peak {result[name]['rss_peak_mib']} MiB, "
              f"growth mid->last third {result[name]['rss_growth_mid_to_last_third_pct']}%")
    failed = [f"{n}.{c}" for n in ("serve_env", "serve_model") if n in result
              for c, ok in result[n]["checks"].items() if not ok]
    if failed:
        sys.exit("soak: failed " + ", ".join(failed))


if __name__ == "__main__":
    main()
