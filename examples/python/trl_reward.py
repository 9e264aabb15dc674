"""A reward function for TRL's GRPOTrainer that scores completions with empathy-gym's simulated
user through `empathy-gym serve-env` (standard library only).

Each dataset row is the opening message of one profile with its simulator seed; a completion is
the policy's first reply, and its reward is the user's emotion after it, / 100 (RLVER's
e/100, read after one turn). The same profile and seed give the same user, so the completions of a
GRPO group are judged by the same simulated person.

With TRL installed:

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

from empathy_env import EmpathyEnv


def make_rows(env, split="train", n=8, seed=0, difficulty="moderate"):
    """Dataset rows: a conversational `prompt` (the user's opening) plus the `profile` and `seed`
    columns that TRL passes on to the reward function."""
    rows = []
    for i in range(n):
        ep = env.create(split=split, difficulty=difficulty, seed=seed + i, policy="trl-dataset")
        env.delete(ep["episode_id"])
        p = ep["profile"]
        rows.append({
            "prompt": [{"role": "user", "content": ep["observation"]["text"]}],
            "profile": f"{p['scenario']}:{p['persona']}",
            "seed": ep["seed"],
            "difficulty": p["difficulty"],
        })
    return rows


def completion_text(completion):
    """TRL gives a string (standard format) or a list of messages (conversational format)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content", "") for m in completion if m.get("role") == "assistant")


class EmpathyReward:
    """A TRL reward function: `reward(prompts, completions, profile, seed, **kwargs) -> [float]`."""

    def __init__(self, url="http://127.0.0.1:8700", policy="trl"):
        self.env = EmpathyEnv(url)
        self.policy = policy
        self.__name__ = "empathy_gym_emotion"  # TRL logs reward functions by name

    def __call__(self, prompts=None, completions=(), profile=(), seed=(), difficulty=None,
                 **kwargs):
        rewards = []
        for i, completion in enumerate(completions):
            ep = self.env.create(profile=profile[i], seed=int(seed[i]), policy=self.policy,
                                 difficulty=difficulty[i] if difficulty else None)
            out = self.env.step(ep["episode_id"], completion_text(completion))
            rewards.append(out["observation"]["emotion"] / 100.0)
            self.env.delete(ep["episode_id"])
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
    for row in rows:
        scores = reward(
            prompts=[row["prompt"]] * 2,
            completions=[[{"role": "assistant", "content": c}] for c in candidates],
            profile=[row["profile"]] * 2,
            seed=[row["seed"]] * 2,
            difficulty=[row["difficulty"]] * 2,
        )
        for s in scores:
            if not 0.0 <= s <= 1.0:
                sys.exit(f"reward {s} outside [0, 1]")
        listener_total += scores[0]
        advice_total += scores[1]
        print(f"| {row['profile']} | {row['seed']} | {scores[0]:.2f} | {scores[1]:.2f} |")
    n = len(rows)
    print(f"mean reward: listener {listener_total / n:.3f}, advice-first {advice_total / n:.3f}")


if __name__ == "__main__":
    main()
