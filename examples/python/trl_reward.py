"""A reward function for TRL's GRPOTrainer that scores completions with empathy-gym's simulated
user through `empathy-gym serve-env` (standard library only).

Each dataset row is the opening message of one profile with its simulator seed; a completion is
the policy's first reply, and its reward is the user's emotion after it, / 100 (RLVER's e/100 after
one turn). The same profile and seed give the same user, so the completions of a GRPO group are
judged by the same simulated person. Each completion is a one-reply episode (`knobs: {max_turns:
1}`): it ends at its step, so serve-env writes its record to `--out`, where `empathy-gym replay
verify` re-runs it. The completions of a call are sent together, so that the server appraises them
in one batch.

With TRL installed (checked with TRL 1.16; benches/compare_trl/trl_grpo.py trains with it):

    from trl import GRPOConfig, GRPOTrainer
    from datasets import Dataset
    from trl_reward import EmpathyReward, make_rows
    reward = EmpathyReward("http://127.0.0.1:8700")
    dataset = Dataset.from_list(make_rows(reward.env, split="train", n=64, seed=0))
    trainer = GRPOTrainer(model=..., reward_funcs=reward, train_dataset=dataset,
                          args=GRPOConfig(...))

Run alone (`python3 trl_reward.py --url URL`) it scores two candidate replies per row and prints
the table: a check that the server and the reward work.
"""

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from empathy_env import EmpathyEnv

# The system prompt `empathy-gym train` gives the policy (`DEFAULT_SYSTEM` in
# src/environment/episode/model_policy.rs), so that a TRL policy sees the prompt the project's trainer sends.
SYSTEM = ("You are a warm, attentive listener. Someone is telling you about something hard in "
          "their life. Reply in two or three sentences.")

# One reply per episode: the episode ends at its step and its record is logged.
ONE_REPLY = {"max_turns": 1}


def make_rows(env, split="train", n=8, seed=0, difficulty="moderate", system=SYSTEM):
    """Dataset rows: a conversational `prompt` (the system prompt, then the user's opening) plus
    the `profile`, `seed` and `difficulty` columns that TRL passes on to the reward function."""
    rows = []
    for i in range(n):
        ep = env.create(split=split, difficulty=difficulty, seed=seed + i, policy="trl-dataset")
        env.delete(ep["episode_id"])
        rows.append(row(ep["profile"], ep["seed"], ep["observation"]["text"], system))
    return rows


def row(profile, seed, opening, system=SYSTEM):
    """One dataset row; `profile` is the server's {scenario, persona, difficulty}. The seed is
    kept as text: simulator seeds span all 64 bits, beyond the signed integers that Arrow (under
    `datasets.Dataset`) stores."""
    prompt = [{"role": "system", "content": system}] if system else []
    return {
        "prompt": prompt + [{"role": "user", "content": opening}],
        "profile": f"{profile['scenario']}:{profile['persona']}",
        "seed": str(seed),
        "difficulty": profile["difficulty"],
    }


def completion_text(completion):
    """TRL gives a string (standard format) or a list of messages (conversational format)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content", "") for m in completion if m.get("role") == "assistant")


class EmpathyReward:
    """A TRL reward function: `reward(prompts, completions, profile, seed, **kwargs) -> [float]`.

    The reward is the one-reply episode's (behavior, final: the user's emotion after the reply /
    100). `self.seconds` adds up the time spent waiting for the server."""

    def __init__(self, url="http://127.0.0.1:8700", policy="trl", workers=64):
        self.env = EmpathyEnv(url)
        self.policy = policy
        self.workers = workers
        self.seconds = 0.0
        self.__name__ = "empathy_gym_emotion"  # TRL logs reward functions by name

    def score(self, profile, seed, difficulty, text):
        ep = self.env.create(profile=profile, seed=int(seed), policy=self.policy,
                             difficulty=difficulty, knobs=ONE_REPLY)
        try:
            return self.env.step(ep["episode_id"], text)["reward"]
        finally:
            self.env.delete(ep["episode_id"])

    def __call__(self, prompts=None, completions=(), profile=(), seed=(), difficulty=None,
                 **kwargs):
        t0 = time.perf_counter()
        jobs = [(profile[i], seed[i], difficulty[i] if difficulty else None, completion_text(c))
                for i, c in enumerate(completions)]
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(jobs)))) as pool:
            rewards = list(pool.map(lambda j: self.score(*j), jobs))
        self.seconds += time.perf_counter() - t0
        return rewards


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8700")
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--split", default="test")
    args = ap.parse_args()
    reward = EmpathyReward(args.url)
    rows = make_rows(reward.env, split=args.split, n=args.rows)
    candidates = [
        "That sounds really hard, and it makes sense that you feel shaken. What has been the hardest part?",
        "You should make a list and fix this tomorrow. Have you considered therapy?",
    ]
    print("| profile | seed | listener | advice-first |")
    print("|---|---:|---:|---:|")
    listener_total = advice_total = 0.0
    for r in rows:
        scores = reward(
            prompts=[r["prompt"]] * 2,
            completions=[[{"role": "assistant", "content": c}] for c in candidates],
            profile=[r["profile"]] * 2,
            seed=[r["seed"]] * 2,
            difficulty=[r["difficulty"]] * 2,
        )
        for s in scores:
            if not 0.0 <= s <= 1.0:
                sys.exit(f"reward {s} outside [0, 1]")
        listener_total += scores[0]
        advice_total += scores[1]
        print(f"| {r['profile']} | {r['seed']} | {scores[0]:.2f} | {scores[1]:.2f} |")
    n = len(rows)
    print(f"mean reward: listener {listener_total / n:.3f}, advice-first {advice_total / n:.3f}")


if __name__ == "__main__":
    main()
