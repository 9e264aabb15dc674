//! A short dialogue on a resolved profile, for the targets whose input ends up in one (scenario,
//! persona, preset and speaker files, scripted policies, the environment server's requests): the
//! environment resets, then takes replies with made-up appraisals (warm, dismissive, advice, off topic, parroting, a big
//! raise) so the speaker voices its reactions from the profile's lines, until the dialogue ends
//! or eight turns have passed; then the reward and the episode record.
//!
//! The appraisals are made up because the real appraiser needs a sentence-embedding model; what
//! is fuzzed here is what the profile's data drives: the speaker, the emotion arithmetic under
//! the knobs, the end, and the record.

use std::collections::BTreeMap;

use empathy_gym::environment::episode::{DialogueEnv, Policy, PolicyRef, PolicyRequest};
use empathy_gym::environment::profile::Profile;
use empathy_gym::environment::reward::{Aggregate, RewardMode};
use empathy_gym::environment::sim::{Appraisal, AppraisalInput, Move, Simulator, SimulatorInfo};

/// A simulator that only names itself (the record asks for it); it appraises nothing.
struct Named;

impl Simulator for Named {
    fn info(&self) -> SimulatorInfo {
        SimulatorInfo {
            kind: "fuzz".into(),
            version: "1".into(),
            ..Default::default()
        }
    }
    fn appraise(&self, _inputs: &[AppraisalInput<'_>]) -> empathy_gym::Result<Vec<Appraisal>> {
        Err(empathy_gym::Error::Other(
            "the fuzz simulator does not appraise".into(),
        ))
    }
}

/// The replies, each with the appraisal it gets: (reply, raw points, moves, components).
type Scripted = (
    &'static str,
    f64,
    &'static [(Move, f64)],
    &'static [&'static str],
);

const SCRIPT: [Scripted; 8] = [
    (
        "That sounds really hard, and it makes sense you feel this way. What has been hardest?",
        12.0,
        &[(Move::Validate, 0.9), (Move::OpenQuestion, 0.8)],
        &[],
    ),
    (
        "At least it's not the end of the world.",
        -14.0,
        &[(Move::Minimize, 0.9)],
        &["misfit"],
    ),
    (
        "You should just talk to them tomorrow.",
        -6.0,
        &[(Move::Advice, 0.9)],
        &["early_advice"],
    ),
    (
        "Anyway, did you see the game last night?",
        -9.0,
        &[(Move::ChangeTopic, 0.9)],
        &["off_topic"],
    ),
    (
        "I told my best friend my parents are splitting up.",
        -3.0,
        &[(Move::Reflect, 0.6)],
        &["copied"],
    ),
    (
        "Everything happens for a reason.",
        -5.0,
        &[(Move::Platitude, 0.9)],
        &["generic"],
    ),
    (
        "I hear you. You carried this alone for a long time.",
        35.0,
        &[(Move::Validate, 1.0), (Move::Reflect, 0.9)],
        &["hurts"],
    ),
    ("asdf qwer zxcv", -2.0, &[], &["gibberish"]),
];

/// The made-up appraisal of scripted reply `i` (any number: it wraps around the script).
pub fn scripted(i: u64) -> (&'static str, Appraisal) {
    let (reply, raw, moves, components) = SCRIPT[(i % SCRIPT.len() as u64) as usize];
    let appraisal = Appraisal {
        moves: moves.iter().copied().collect(),
        components: components
            .iter()
            .map(|c| (c.to_string(), raw / components.len() as f64))
            .collect::<BTreeMap<_, _>>(),
        raw,
        warmth: 0.5,
        reasons: vec!["made up".into()],
        ..Default::default()
    };
    (reply, appraisal)
}

/// Where the replies of a played dialogue come from.
pub enum Replies<'a> {
    /// The script's replies.
    Script,
    /// The same text (and think section) every turn, as a client of `serve-env` might send.
    Fixed(&'a str, Option<&'a str>),
    /// A policy, asked as a rollout asks it.
    Policy(&'a mut dyn Policy),
}

/// Plays the profile as described in the module docs; `seed` picks the order of the replies.
pub fn play(profile: Profile, seed: u64) -> anyhow::Result<()> {
    play_as(
        profile,
        seed,
        RewardMode::Behavior,
        Aggregate::Mean,
        Replies::Script,
    )
}

/// [`play`] under a reward mode and aggregate, with replies from `replies` (the appraisals are
/// the script's whatever the reply).
pub fn play_as(
    profile: Profile,
    seed: u64,
    mode: RewardMode,
    aggregate: Aggregate,
    mut replies: Replies<'_>,
) -> anyhow::Result<()> {
    let id = profile.id.clone();
    let mut env = DialogueEnv::new(profile, mode, aggregate);
    env.reset(seed);
    for turn in 1..=8u32 {
        if env.is_done() {
            break;
        }
        let (scripted_reply, appraisal) = scripted(seed.wrapping_add(u64::from(turn) * 3));
        let (text, think) = match &mut replies {
            Replies::Script => (scripted_reply.to_string(), None),
            Replies::Fixed(text, think) => (text.to_string(), think.map(str::to_string)),
            Replies::Policy(policy) => {
                let request = PolicyRequest {
                    episode: 0,
                    profile: &id,
                    turns: env.turns(),
                    turn,
                };
                let reply = policy
                    .reply_batch(&[request])?
                    .pop()
                    .ok_or_else(|| anyhow::anyhow!("the policy gave no reply"))?;
                (reply.text, reply.think)
            }
        };
        env.appraisal_input(&text)?;
        env.apply(&text, think, appraisal);
    }
    env.rubric();
    let record = env.record(&Named, PolicyRef::default());
    serde_json::to_string(&record)?;
    Ok(())
}
