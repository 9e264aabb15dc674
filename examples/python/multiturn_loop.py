"""A verifiers-style multi-turn rollout against `empathy-gym serve-env` (standard library only).

The environment supplies verifiers' two hooks, `is_completed(messages, state)` and
`env_response(messages, state)`; `rollout` is the one loop that asks the policy, sends its reply
and stops when the simulated user resolved, left, or the turn limit was reached. The reward is the
episode's (behavior: final emotion / 100), with its named components kept beside it.

The policy is any function from chat messages to a reply: a scripted listener by default, or an
OpenAI-compatible /v1/chat/completions endpoint (`--policy-url`, e.g. `empathy-gym serve-model`).

    python3 multiturn_loop.py --url http://127.0.0.1:8700 --episodes 4 --out episodes.jsonl
"""

import argparse
import json
import sys
import urllib.request

from empathy_env import EmpathyEnv

LISTENER = [
    "That sounds really hard, and it makes sense that you're shaken by it. What has been the hardest part for you?",
    "It sounds like this has been weighing on you for a while. How have you been holding up?",
    "I can hear how much this matters to you. What goes through your mind when you think about it?",
    "That makes sense. What would feel most helpful to talk about right now?",
]


def scripted_policy(messages):
    """Replies in order, one per turn; the last one repeats."""
    turn = sum(1 for m in messages if m["role"] == "assistant")
    return LISTENER[min(turn, len(LISTENER) - 1)]


def openai_policy(url, model, temperature=0.7, max_tokens=96):
    """A policy behind an OpenAI-compatible chat endpoint."""

    def policy(messages):
        body = json.dumps({"model": model, "messages": messages, "temperature": temperature,
                           "max_tokens": max_tokens}).encode()
        req = urllib.request.Request(url.rstrip("/") + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            return json.loads(resp.read())["choices"][0]["message"]["content"]

    return policy


class EmpathyMultiTurnEnv:
    """verifiers' MultiTurnEnv shape: setup_state, is_completed, env_response."""

    def __init__(self, env, split="test", difficulty="moderate", system_prompt=None):
        self.env = env
        self.split = split
        self.difficulty = difficulty
        self.system_prompt = system_prompt or (
            "You are a supportive listener. Reply in two or three sentences.")

    def setup_state(self, seed):
        ep = self.env.create(split=self.split, difficulty=self.difficulty, seed=seed,
                             policy="verifiers-loop")
        messages = [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": ep["observation"]["text"]}]
        state = {"episode_id": ep["episode_id"], "profile": ep["profile"], "done": False,
                 "reward": 0.0, "emotions": [ep["observation"]["emotion"]]}
        return messages, state

    def is_completed(self, messages, state):
        return state["done"]

    def env_response(self, messages, state):
        out = self.env.step(state["episode_id"], messages[-1]["content"])
        state["done"] = out["terminated"] or out["truncated"]
        state["reward"] = out["reward"]
        state["reward_components"] = out["reward_components"]
        state["end"] = out["end"]
        state["emotions"].append(out["observation"]["emotion"])
        return [{"role": "user", "content": out["observation"]["text"]}], state

    def rollout(self, policy, seed):
        messages, state = self.setup_state(seed)
        while not self.is_completed(messages, state):
            messages.append({"role": "assistant", "content": policy(messages)})
            reply, state = self.env_response(messages, state)
            messages.extend(reply)
        return messages, state


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8700")
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--split", default="test")
    ap.add_argument("--difficulty", default="moderate")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy-url", help="an OpenAI-compatible endpoint for the policy")
    ap.add_argument("--policy-model", default="policy")
    ap.add_argument("--out", help="write the episodes' records here (JSONL, replay reads it)")
    args = ap.parse_args()
    env = EmpathyEnv(args.url)
    policy = (openai_policy(args.policy_url, args.policy_model) if args.policy_url
              else scripted_policy)
    vf_env = EmpathyMultiTurnEnv(env, split=args.split, difficulty=args.difficulty)
    records = []
    for i in range(args.episodes):
        messages, state = vf_env.rollout(policy, seed=args.seed + i)
        p = state["profile"]
        print(f"{p['scenario']}:{p['persona']}  {state['end']:<9} emotions "
              f"{' '.join(map(str, state['emotions']))}  reward {state['reward']:.3f}")
        records.append(env.record(state["episode_id"]))
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    mean = sum(r["reward"] for r in records) / max(len(records), 1)
    print(f"{len(records)} episodes, mean reward {mean:.3f}")
    if any(r.get("end") is None for r in records):
        sys.exit("an episode's record has no end")


if __name__ == "__main__":
    main()
