"""Multi-turn dialogues with the simulated user inside TRL's GRPOTrainer, through its `rollout_func`
(experimental in TRL 1.16) and `env_mask`.

For every prompt of the batch (TRL repeats each dataset row `num_generations` times, so a group
shares its row) the rollout creates an episode on `empathy-gym serve-env` with the row's profile
and simulator seed, then alternates: the policy (the trainer's model, sampled with the trainer's
temperature and top-p) writes a reply, the server appraises it and answers as the user, until the
episode ends (`max_turns` replies, or the user resolves or leaves). The completion TRL trains on
is the whole dialogue after the prompt: the policy's sampled tokens (env_mask 1) and, between
them, the chat template's user turns (env_mask 0, context the loss skips). The reward is the
episode's (behavior, final: the user's last emotion / 100), passed to the reward function as the
extra field `episode_reward`. Every episode ends, so serve-env logs it to `--out`.

    from trl_multiturn import EmpathyRollout, episode_reward
    rollout = EmpathyRollout(env, rows, max_turns=3)
    trainer = GRPOTrainer(model=..., reward_funcs=episode_reward, train_dataset=Dataset.from_list(rows),
                          rollout_func=rollout, args=GRPOConfig(...))

Needs torch and transformers (TRL's own dependencies); the client is empathy_env.py.
"""

import torch


def episode_reward(completions=(), episode_reward=(), **kwargs):
    """The reward function for EmpathyRollout: the episode's reward, computed by the server."""
    return list(episode_reward)


class EmpathyRollout:
    """A TRL `rollout_func`: `rollout(prompts, trainer) -> {prompt_ids, completion_ids, logprobs,
    env_mask, episode_reward}`."""

    def __init__(self, env, rows, max_turns=3, policy="trl-multiturn"):
        self.env, self.max_turns, self.policy = env, max_turns, policy
        # TRL hands the rollout the prompts alone: each row is found again by its opening.
        self.rows = {}
        for row in rows:
            key = row["prompt"][-1]["content"]
            if key in self.rows and self.rows[key] != row:
                raise ValueError(f"two rows open with the same message ({key[:60]!r}); the "
                                 "rollout finds a row by its opening, so make them distinct")
            self.rows[key] = row

    def __call__(self, prompts, trainer):
        tok = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        args = trainer.args
        rows = [self.rows[p[-1]["content"]] for p in prompts]
        episodes = [self.env.create(profile=r["profile"], seed=int(r["seed"]), policy=self.policy,
                                    difficulty=r.get("difficulty"),
                                    knobs={"max_turns": self.max_turns}) for r in rows]
        prompt_ids = [tok.apply_chat_template(p, add_generation_prompt=True, tokenize=True,
                                              return_dict=False) for p in prompts]
        completion_ids = [[] for _ in prompts]
        env_mask = [[] for _ in prompts]
        rewards = [0.0] * len(prompts)
        live = list(range(len(prompts)))
        eos = tok.eos_token_id
        while live:
            contexts = [prompt_ids[i] + completion_ids[i] for i in live]
            replies = self.generate(model, tok, contexts, args)
            still = []
            for i, reply in zip(live, replies):
                completion_ids[i] += reply
                env_mask[i] += [1] * len(reply)
                text = tok.decode(reply, skip_special_tokens=True)
                out = self.env.step(episodes[i]["episode_id"], text)
                if out["terminated"] or out["truncated"]:
                    rewards[i] = out["reward"]
                    if not reply or reply[-1] != eos:  # cut at the token limit: close the turn
                        completion_ids[i].append(eos)
                        env_mask[i].append(0)
                    continue
                turn = user_turn_ids(tok, out["observation"]["text"], ended=reply[-1:] == [eos])
                completion_ids[i] += turn
                env_mask[i] += [0] * len(turn)
                still.append(i)
            live = still
        for ep in episodes:
            self.env.delete(ep["episode_id"])
        # Sampling log-probs are optional without vLLM (TRL recomputes them for the loss).
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None,
                "env_mask": env_mask, "episode_reward": rewards}

    @staticmethod
    @torch.no_grad()
    def generate(model, tok, contexts, args):
        """One reply per context (token lists), sampled as the trainer samples; each reply's tokens
        up to and including its end-of-turn token."""
        width = max(len(c) for c in contexts)
        pad = tok.pad_token_id
        ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts])
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        out = model.generate(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                             do_sample=True, temperature=args.temperature, top_p=args.top_p,
                             top_k=0, max_new_tokens=args.max_completion_length,
                             pad_token_id=pad, eos_token_id=tok.eos_token_id)
        replies = []
        for row in out[:, width:].tolist():
            if tok.eos_token_id in row:
                row = row[:row.index(tok.eos_token_id) + 1]
            replies.append(row)
        return replies


def user_turn_ids(tok, text, ended):
    """The tokens between one policy reply and the next: the rest of the reply's end of turn
    (all of it when the reply was cut at the token limit, `ended` False), the user's message
    and the opening of the next assistant turn, as the chat template writes them."""
    base = [{"role": "user", "content": "."}, {"role": "assistant", "content": "A"}]
    before = tok.apply_chat_template(base, tokenize=False)
    after = tok.apply_chat_template(base + [{"role": "user", "content": text}], tokenize=False,
                                    add_generation_prompt=True)
    if not after.startswith(before):
        raise ValueError("the chat template rewrites earlier turns when a turn is added; "
                         "user_turn_ids needs one that appends")
    end_of_reply = before[before.rindex("A") + 1:]  # e.g. "<|im_end|>\n"
    eos_text = tok.decode([tok.eos_token_id])
    if ended and end_of_reply.startswith(eos_text):
        end_of_reply = end_of_reply[len(eos_text):]
    return tok(end_of_reply + after[len(before):], add_special_tokens=False)["input_ids"]
