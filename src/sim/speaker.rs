//! The Speaker: the user's next message, built from the scenario's utterance bank for the current
//! bucket in the persona's voice, revealing hidden facts and hinting at the need. Deterministic
//! given the dialogue's RNG (docs/SCENARIOS.md describes the order of the parts).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::emotion::Bucket;
use super::text::normalize;
use crate::profile::{Character, Profile};

/// Points of rise from which trust makes a (non-avoidant) user reveal the next hidden fact.
pub const REVEAL_MIN_DELTA: i32 = 5;

/// What the speaker remembers within one dialogue.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpeakerMemory {
    /// Bank lines already used, as (bucket, index).
    used: Vec<(Bucket, usize)>,
    /// Hidden facts revealed so far, in the order of the scenario.
    pub revealed: Vec<bool>,
    /// Whether the user has hinted at the need.
    pub hinted: bool,
}

/// What happened this turn, as far as the speaker is concerned.
#[derive(Clone, Debug)]
pub struct SpeakInput<'a> {
    pub emotion: u8,
    pub delta: i32,
    /// The policy's reply (questions in it can draw out hidden facts).
    pub reply: &'a str,
    /// A factual question due now.
    pub question: Option<&'a str>,
    /// Points of rise from which trust reveals a fact.
    pub reveal_min_delta: i32,
}

fn pick<'a>(
    lines: &'a [String],
    bucket: Bucket,
    mem: &mut SpeakerMemory,
    rng: &mut ChaCha8Rng,
) -> &'a str {
    let fresh: Vec<usize> = (0..lines.len())
        .filter(|i| !mem.used.contains(&(bucket, *i)))
        .collect();
    let i = if fresh.is_empty() {
        rng.random_range(0..lines.len())
    } else {
        fresh[rng.random_range(0..fresh.len())]
    };
    mem.used.push((bucket, i));
    &lines[i]
}

/// Which hidden fact comes out now, if any: one the policy asked about (a question mentioning a
/// cue), else the next one in order when trust grew and the persona is not avoidant.
fn fact_to_reveal(profile: &Profile, mem: &SpeakerMemory, input: &SpeakInput<'_>) -> Option<usize> {
    let facts = &profile.scenario.hidden_facts;
    let questions: String = input
        .reply
        .split_inclusive(['.', '!', '?', '\n'])
        .filter(|s| s.trim_end().ends_with('?'))
        .collect();
    let asked = normalize(&questions);
    let unrevealed = |i: &usize| !mem.revealed.get(*i).copied().unwrap_or(false);
    let by_question = (0..facts.len())
        .filter(unrevealed)
        .find(|&i| facts[i].cues.iter().any(|c| asked.contains(&normalize(c))));
    let trusting =
        input.delta >= input.reveal_min_delta && profile.persona.character != Character::Avoidant;
    by_question.or_else(|| {
        if trusting {
            (0..facts.len()).find(unrevealed)
        } else {
            None
        }
    })
}

/// The user's next message. S and F buckets end the dialogue with a closing line only.
pub fn speak(
    profile: &Profile,
    mem: &mut SpeakerMemory,
    rng: &mut ChaCha8Rng,
    input: &SpeakInput<'_>,
) -> String {
    let (scenario, persona) = (&profile.scenario, &profile.persona);
    if mem.revealed.len() != scenario.hidden_facts.len() {
        mem.revealed = vec![false; scenario.hidden_facts.len()];
    }
    let bucket = Bucket::of(input.emotion);
    let u = &scenario.utterances;
    let bank = match bucket {
        Bucket::S => return pick(&u.S, bucket, mem, rng).to_string(),
        Bucket::F => return pick(&u.F, bucket, mem, rng).to_string(),
        Bucket::A => &u.A,
        Bucket::B => &u.B,
        Bucket::C => &u.C,
    };
    let voice = match bucket {
        Bucket::A => &persona.voice.high,
        Bucket::B => &persona.voice.mid,
        _ => &persona.voice.low,
    };
    let mut parts: Vec<String> = Vec::new();
    if rng.random_bool(0.5) {
        parts.push(voice[rng.random_range(0..voice.len())].clone());
    }
    parts.push(pick(bank, bucket, mem, rng).to_string());
    if let Some(i) = fact_to_reveal(profile, mem, input) {
        mem.revealed[i] = true;
        parts.push(scenario.hidden_facts[i].text.clone());
    }
    if !mem.hinted && rng.random_bool(profile.knobs.hint_rate) {
        mem.hinted = true;
        parts.push(scenario.hints[rng.random_range(0..scenario.hints.len())].clone());
    }
    if let Some(q) = input.question {
        parts.push(q.to_string());
    }
    parts.join(" ")
}
