"""A client for `empathy-gym serve-env`, standard library only (urllib).

    env = EmpathyEnv("http://127.0.0.1:8700")
    ep = env.create(profile="job-loss-warehouse:maya", difficulty="moderate", seed=7)
    out = env.step(ep["episode_id"], "That sounds really hard. What happened?")
    out["observation"]["text"], out["reward"], out["terminated"], out["truncated"]
    env.record(ep["episode_id"])   # the episode's JSONL record, the schema `empathy-gym replay` reads

Every error the server sends is a 4xx/5xx with {"error": "..."}; it is raised as EnvError.
"""

import json
import urllib.error
import urllib.request


class EnvError(Exception):
    """An HTTP error from serve-env: the status and the server's message."""

    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class EmpathyEnv:
    """The environment over HTTP: create, step, record, delete."""

    def __init__(self, base_url="http://127.0.0.1:8700", timeout=120.0):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as e:
            raw = e.read().decode(errors="replace")
            try:
                message = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                message = raw
            raise EnvError(e.code, message) from None
        return text

    def create(self, profile=None, split=None, difficulty=None, reward_mode=None,
               aggregate=None, seed=None, policy=None, knobs=None):
        """Starts an episode; give `profile` ("scenario:persona") or `split` ("train"/"test").
        `knobs` overrides the difficulty preset's knobs (e.g. {"max_turns": 1})."""
        body = {k: v for k, v in dict(profile=profile, split=split, difficulty=difficulty,
                                      reward_mode=reward_mode, aggregate=aggregate, seed=seed,
                                      policy=policy, knobs=knobs).items() if v is not None}
        return json.loads(self._call("POST", "/v1/episodes", body))

    def step(self, episode_id, reply, think=None):
        """Sends the policy's reply; returns observation, reward, terminated, truncated, ..."""
        body = {"reply": reply}
        if think is not None:
            body["think"] = think
        return json.loads(self._call("POST", f"/v1/episodes/{episode_id}/step", body))

    def record(self, episode_id):
        """The episode's record (one JSONL line, parsed)."""
        return json.loads(self._call("GET", f"/v1/episodes/{episode_id}/record"))

    def delete(self, episode_id):
        self._call("DELETE", f"/v1/episodes/{episode_id}")

    def health(self):
        return json.loads(self._call("GET", "/v1/health"))
