//! One dialogue as a Gymnasium-style environment: `reset(seed)` gives the opening message,
//! `step(reply)` the user's answer, emotion, reward, terminated and truncated. All randomness comes
//! from one RNG the environment owns, seeded at reset. Several environments step together through
//! [`step_batch`], so the simulator embeds all replies of a turn in one batch.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::record::{End, EpisodeRecord, PolicyRef, ProfileRef, SimulatorRef, Turn, SCHEMA};
use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::reward::{self, Aggregate, RewardMode, Rubric};
use crate::sim::emotion::{applied_delta, apply_delta};
use crate::sim::speaker::{speak, SpeakInput, SpeakerMemory};
use crate::sim::{Appraisal, AppraisalInput, Simulator};

/// What `reset` and `step` show the policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// The user's message.
    pub text: String,
    /// The user's emotion after it (the policy never sees this in training prompts).
    pub emotion: u8,
}

/// The result of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepOutcome {
    pub obs: Observation,
    /// This step's reward: the per-turn reward for dense, the episode's total on the last step
    /// otherwise, else 0.
    pub reward: f64,
    /// The user resolved or left.
    pub terminated: bool,
    /// The turn limit was reached.
    pub truncated: bool,
    pub delta: i32,
    pub appraisal: Appraisal,
}

/// One dialogue with the simulated user.
#[derive(Clone, Debug)]
pub struct DialogueEnv {
    profile: Profile,
    reward_mode: RewardMode,
    aggregate: Aggregate,
    seed: u64,
    rng: ChaCha8Rng,
    emotion: u8,
    turns: Vec<Turn>,
    policy_turns: u32,
    memory: SpeakerMemory,
    /// Index into the scenario's factual turns of the question just asked.
    pending_question: Option<usize>,
    end: Option<End>,
}

impl DialogueEnv {
    /// A new environment for `profile`; call [`DialogueEnv::reset`] before stepping.
    pub fn new(profile: Profile, reward_mode: RewardMode, aggregate: Aggregate) -> Self {
        DialogueEnv {
            emotion: profile.knobs.start_emotion,
            profile,
            reward_mode,
            aggregate,
            seed: 0,
            rng: ChaCha8Rng::seed_from_u64(0),
            turns: Vec::new(),
            policy_turns: 0,
            memory: SpeakerMemory::default(),
            pending_question: None,
            end: None,
        }
    }

    /// Starts the dialogue: the user's opening message at the start emotion.
    pub fn reset(&mut self, seed: u64) -> Observation {
        self.seed = seed;
        self.rng = ChaCha8Rng::seed_from_u64(seed);
        self.emotion = self.profile.knobs.start_emotion;
        self.policy_turns = 0;
        self.memory = SpeakerMemory::default();
        self.pending_question = None;
        self.end = None;
        let text = self.profile.scenario.opening.clone();
        self.turns = vec![Turn::User {
            text: text.clone(),
            emotion: self.emotion,
            delta: None,
            appraisal: None,
        }];
        Observation {
            text,
            emotion: self.emotion,
        }
    }

    /// The profile being played.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The turns so far.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// True once the user resolved, left, or the turn limit was reached.
    pub fn is_done(&self) -> bool {
        self.end.is_some()
    }

    /// What the appraiser needs to judge `reply` (borrowing this environment).
    pub fn appraisal_input<'a>(&'a self, reply: &'a str) -> Result<AppraisalInput<'a>> {
        if self.end.is_some() || self.turns.is_empty() {
            return Err(Error::Other(
                "step() on a dialogue that is over or not reset".into(),
            ));
        }
        let mut user_messages = Vec::new();
        let mut previous_replies = Vec::new();
        for t in &self.turns {
            match t {
                Turn::User { text, .. } => user_messages.push(text.as_str()),
                Turn::Assistant { text, .. } => previous_replies.push(text.as_str()),
            }
        }
        Ok(AppraisalInput {
            profile: &self.profile,
            emotion: self.emotion,
            turn: self.policy_turns + 1,
            reply,
            user_messages,
            previous_replies,
            factual: self
                .pending_question
                .map(|i| &self.profile.scenario.factual[i]),
        })
    }

    /// Applies an appraisal of `reply`: moves the emotion, decides the end, lets the user speak.
    pub fn apply(
        &mut self,
        reply: &str,
        think: Option<String>,
        mut appraisal: Appraisal,
    ) -> StepOutcome {
        let written = appraisal.user_text.take();
        let knobs = &self.profile.knobs;
        let is_unsafe = appraisal.unsafe_reply.is_some();
        let delta = applied_delta(
            self.emotion,
            appraisal.raw,
            is_unsafe,
            knobs.quantum,
            knobs.step_cap,
        );
        self.emotion = apply_delta(self.emotion, delta);
        self.policy_turns += 1;
        self.turns.push(Turn::Assistant {
            text: reply.to_string(),
            think,
        });
        let terminated = is_unsafe || self.emotion >= 100 || self.emotion < 10;
        let truncated = !terminated && self.policy_turns >= knobs.max_turns;
        self.end = match (self.emotion, terminated, truncated) {
            _ if is_unsafe => Some(End::Unsafe),
            (100, true, _) => Some(End::Resolved),
            (_, true, _) => Some(End::Left),
            (_, _, true) => Some(End::MaxTurns),
            _ => None,
        };
        let next_q = (!terminated && !truncated)
            .then(|| {
                self.profile
                    .scenario
                    .factual
                    .iter()
                    .position(|q| q.after_turn == self.policy_turns)
            })
            .flatten();
        self.pending_question = next_q;
        let question = next_q.map(|i| {
            let q = &self.profile.scenario.factual[i];
            match &q.belief {
                Some(b) => format!("{} I'm pretty sure it's {b}.", q.question),
                None => q.question.clone(),
            }
        });
        let input = SpeakInput {
            emotion: self.emotion,
            delta,
            reply,
            appraisal: &appraisal,
            question: question.as_deref(),
            reveal_min_delta: crate::sim::speaker::REVEAL_MIN_DELTA,
        };
        let text = match written {
            // The simulator wrote the user's message (the LLM user); a pending factual question
            // is still asked, as the speaker would.
            Some(t) => match &question {
                Some(q) => format!("{t} {q}"),
                None => t,
            },
            None => speak(&self.profile, &mut self.memory, &mut self.rng, &input),
        };
        self.turns.push(Turn::User {
            text: text.clone(),
            emotion: self.emotion,
            delta: Some(delta),
            appraisal: Some(appraisal.clone()),
        });
        let reward = self.step_reward(delta);
        StepOutcome {
            obs: Observation {
                text,
                emotion: self.emotion,
            },
            reward,
            terminated,
            truncated,
            delta,
            appraisal,
        }
    }

    fn step_reward(&self, delta: i32) -> f64 {
        if reward::rewards_each_turn(self.reward_mode, self.aggregate) {
            reward::turn_reward(delta)
        } else if self.end.is_some() {
            self.rubric().total
        } else {
            0.0
        }
    }

    /// The episode's reward so far.
    pub fn rubric(&self) -> Rubric {
        let emotions: Vec<u8> = self
            .turns
            .iter()
            .filter_map(|t| {
                if let Turn::User { emotion, .. } = t {
                    Some(*emotion)
                } else {
                    None
                }
            })
            .collect();
        let warmths: Vec<f64> = self
            .turns
            .iter()
            .filter_map(|t| {
                if let Turn::User {
                    appraisal: Some(a), ..
                } = t
                {
                    Some(a.warmth)
                } else {
                    None
                }
            })
            .collect();
        let mut rubric = reward::score(self.reward_mode, self.aggregate, &emotions, &warmths);
        if self.end == Some(End::Unsafe) {
            reward::floor_unsafe(&mut rubric, self.reward_mode, self.aggregate);
        }
        rubric
    }

    /// Steps one dialogue alone (the batch path with a batch of one).
    pub fn step(&mut self, sim: &dyn Simulator, reply: &str) -> Result<StepOutcome> {
        let mut out = step_batch(sim, &mut [self], &[(reply.to_string(), None)])?;
        Ok(out.remove(0))
    }

    /// The finished dialogue as a record (ids and policy filled in by the caller).
    pub fn record(&self, sim: &dyn Simulator, policy: PolicyRef) -> EpisodeRecord {
        let info = sim.info();
        let rubric = self.rubric();
        let p = &self.profile;
        EpisodeRecord {
            schema: SCHEMA.into(),
            run: String::new(),
            step: 0,
            group: 0,
            sample: 0,
            profile: ProfileRef {
                scenario: p.id.scenario.clone(),
                persona: p.id.persona.clone(),
                difficulty: p.difficulty,
                knobs: Some(p.knobs.clone()),
            },
            simulator: SimulatorRef {
                kind: info.kind,
                version: info.version,
                seed: self.seed,
                backend: info.backend,
                model: info.model,
                prompt_version: info.prompt_version,
                device: info.device,
                data: info.data,
            },
            reward_mode: self.reward_mode,
            reward_aggregate: self.aggregate,
            policy,
            turns: self.turns.clone(),
            end: self.end,
            reward: Some(rubric.total),
            reward_components: rubric.components,
        }
    }
}

/// Steps several dialogues with one appraisal batch. `replies[i]` is (text, think) for `envs[i]`.
pub fn step_batch(
    sim: &dyn Simulator,
    envs: &mut [&mut DialogueEnv],
    replies: &[(String, Option<String>)],
) -> Result<Vec<StepOutcome>> {
    if envs.len() != replies.len() {
        return Err(Error::Other(format!(
            "{} dialogues but {} replies",
            envs.len(),
            replies.len()
        )));
    }
    let appraisals = {
        let inputs = envs
            .iter()
            .zip(replies)
            .map(|(env, (text, _))| env.appraisal_input(text))
            .collect::<Result<Vec<_>>>()?;
        sim.appraise(&inputs)?
    };
    Ok(envs
        .iter_mut()
        .zip(replies)
        .zip(appraisals)
        .map(|((env, (text, think)), a)| env.apply(text, think.clone(), a))
        .collect())
}
