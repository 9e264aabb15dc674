//! The Speaker: the user's next message, keyed to the reply it answers. It reads what the appraiser
//! found (the same findings that moved the emotion) and composes the message from parts, in the
//! order docs/SCENARIOS.md gives: an opener in the persona's voice, a reaction to the reply, an
//! answer to its question, a fact trust brings out, a line for the mood, a hint, a question back,
//! and the factual question due. No sentence is said twice in a dialogue; when the material runs
//! out the user says so. Deterministic given the dialogue's RNG.

pub mod reaction;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::emotion::Bucket;
use super::text::{normalize, sentences};
use super::Appraisal;
use crate::profile::speech::fill;
use crate::profile::{Character, HiddenFact, Profile, QuestionKind, Reaction, SpeakerRules};
use reaction::{echoes, questions, reaction};

/// Points of rise from which trust makes a (non-avoidant) user reveal the next hidden fact.
pub const REVEAL_MIN_DELTA: i32 = 5;

/// Below this emotion a user is guarded (buckets C and F).
const GUARDED_BELOW: u8 = 40;

/// What the speaker remembers within one dialogue.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpeakerMemory {
    /// Every sentence said so far (the opening included), normalized.
    said: BTreeSet<String>,
    /// Hidden facts revealed so far, in the order of the scenario.
    pub revealed: Vec<bool>,
    /// Whether the user has hinted at the need.
    pub hinted: bool,
    started: bool,
}

impl SpeakerMemory {
    /// True when no sentence of `line` has been said yet.
    fn fresh(&self, line: &str) -> bool {
        sentences(line)
            .iter()
            .all(|s| !self.said.contains(&normalize(s)))
    }

    fn remember(&mut self, line: &str) {
        self.said
            .extend(sentences(line).iter().map(|s| normalize(s)));
    }
}

/// What happened this turn, as far as the speaker is concerned.
#[derive(Clone, Debug)]
pub struct SpeakInput<'a> {
    pub emotion: u8,
    pub delta: i32,
    /// The policy's reply.
    pub reply: &'a str,
    /// How the reply landed: the reaction and the acknowledgement are read off it.
    pub appraisal: &'a Appraisal,
    /// A factual question due now.
    pub question: Option<&'a str>,
    /// Points of rise from which trust reveals a fact.
    pub reveal_min_delta: i32,
}

/// One message being composed: every line it takes is fresh and is remembered.
struct Message<'m> {
    mem: &'m mut SpeakerMemory,
    rng: &'m mut ChaCha8Rng,
    parts: Vec<String>,
    /// Parts other than the opener and the factual question.
    said_something: bool,
}

impl Message<'_> {
    /// A fresh line from the first pool that has one, picked at random within that pool.
    fn pick(&mut self, pools: &[&[String]]) -> Option<String> {
        for pool in pools {
            let fresh: Vec<&String> = pool.iter().filter(|l| self.mem.fresh(l)).collect();
            if !fresh.is_empty() {
                let line = fresh[self.rng.random_range(0..fresh.len())].clone();
                return Some(line);
            }
        }
        None
    }

    fn say(&mut self, line: String) {
        self.mem.remember(&line);
        self.parts.push(line);
        self.said_something = true;
    }

    fn say_from(&mut self, pools: &[&[String]]) -> bool {
        match self.pick(pools) {
            Some(line) => {
                self.say(line);
                true
            }
            None => false,
        }
    }
}

/// The scenario's own lines for a reaction. A scenario's lines about advice name a suggestion ("A
/// bed downstairs, right."), so they answer only a reply that shares a content word with them: a
/// suggestion is mentioned only when the policy made it.
fn own_lines(profile: &Profile, r: Reaction, reply: &str) -> Vec<String> {
    let own = profile
        .scenario
        .reactions
        .get(&r)
        .map_or(&[][..], Vec::as_slice);
    match r {
        Reaction::AdviceRejected | Reaction::AdviceWelcome => {
            let common = &profile.speaker.common_words;
            let said = content_stems(reply, common);
            own.iter()
                .filter(|l| !content_stems(l, common).is_disjoint(&said))
                .cloned()
                .collect()
        }
        _ => own.to_vec(),
    }
}

/// The stems of a text's content words: words of at least [`STEM`] letters that are not common,
/// cut to their first [`STEM`] (a crude stem: "suggest", "suggested" and "suggestion" share one).
fn content_stems(text: &str, common: &[String]) -> BTreeSet<String> {
    normalize(text)
        .split_whitespace()
        .filter(|w| w.chars().count() >= STEM && !common.iter().any(|c| c == w))
        .map(|w| w.chars().take(STEM).collect())
        .collect()
}

/// Letters a word must have to count as content, and that its stem keeps.
const STEM: usize = 5;

/// The user's next message. S and F buckets end the dialogue with a closing line.
pub fn speak(
    profile: &Profile,
    mem: &mut SpeakerMemory,
    rng: &mut ChaCha8Rng,
    input: &SpeakInput<'_>,
) -> String {
    let (scenario, persona, rules) = (&profile.scenario, &profile.persona, &*profile.speaker);
    if !mem.started {
        mem.started = true;
        mem.revealed = vec![false; scenario.hidden_facts.len()];
        mem.remember(&scenario.opening);
    }
    let bucket = Bucket::of(input.emotion);
    let echo = echoes(input.reply, &mem.said);
    let reacted = reaction(input.appraisal, input.delta, echo);
    let mut msg = Message {
        mem,
        rng,
        parts: Vec::new(),
        said_something: false,
    };
    let u = &scenario.utterances;
    if let Some(finding) = &input.appraisal.unsafe_reply {
        // The category's own words first: what the user heard decides how they leave.
        let by_kind = rules
            .unsafe_by_kind
            .get(finding.kind.as_str())
            .map_or(&[][..], Vec::as_slice);
        msg.say_from(&[by_kind, rules.lines(Reaction::Unsafe)]);
        return finish(msg, rules);
    }
    match bucket {
        Bucket::S => {
            msg.say_from(&[&u.S]);
            return finish(msg, rules);
        }
        Bucket::F => {
            if let Some(r) = reacted {
                say_reaction(&mut msg, profile, r, input.reply);
            }
            msg.say_from(&[&u.F]);
            return finish(msg, rules);
        }
        _ => {}
    }
    let voice = match bucket {
        Bucket::A => &persona.voice.high,
        Bucket::B => &persona.voice.mid,
        _ => &persona.voice.low,
    };
    if msg.rng.random_bool(rules.opener_rate) {
        if let Some(o) = msg.pick(&[voice]) {
            msg.mem.remember(&o);
            msg.parts.push(o);
        }
    }
    match reacted {
        Some(r) => say_reaction(&mut msg, profile, r, input.reply),
        None if input.delta > 0 => acknowledge(&mut msg, profile, input.reply),
        None => {}
    }
    let asked = questions(input.reply);
    let mut revealed_now = false;
    if !asked.is_empty() && !reacted.is_some_and(Reaction::not_listening) {
        if input.appraisal.components.contains_key("stacked_questions") {
            msg.say_from(&[rules.lines(Reaction::Stacked)]);
        }
        revealed_now = answer(&mut msg, profile, &asked, input.emotion, reacted.is_some());
    }
    let trusting =
        input.delta >= input.reveal_min_delta && persona.character != Character::Avoidant;
    if trusting && !revealed_now {
        if let Some(i) = (0..scenario.hidden_facts.len()).find(|&i| !msg.mem.revealed[i]) {
            msg.mem.revealed[i] = true;
            msg.say(scenario.hidden_facts[i].text.clone());
        }
    }
    if !msg.said_something {
        // Nothing in the reply to answer: how the user feels now. A fall makes a warm user cool.
        let bank = match bucket {
            Bucket::A if input.delta >= 0 => &u.A,
            Bucket::A | Bucket::B => &u.B,
            _ => &u.C,
        };
        msg.say_from(&[bank]);
    }
    let hint_now = !msg.mem.hinted
        && !scenario.hints.is_empty()
        && msg.rng.random_bool(profile.knobs.hint_rate);
    if hint_now && msg.say_from(&[&scenario.hints]) {
        msg.mem.hinted = true;
    }
    let ask_back = asked.is_empty()
        && input.emotion >= GUARDED_BELOW
        && input.delta > 0
        && msg.rng.random_bool(rules.ask_back_rate);
    if ask_back {
        msg.say_from(&[&scenario.asks]);
    }
    if let Some(q) = input.question {
        msg.mem.remember(q);
        msg.parts.push(q.to_string());
    }
    finish(msg, rules)
}

/// A line for reaction `r`: the scenario's own first, then the speaker's generic ones.
fn say_reaction(msg: &mut Message<'_>, profile: &Profile, r: Reaction, reply: &str) {
    let own = own_lines(profile, r, reply);
    msg.say_from(&[&own, profile.speaker.lines(r)]);
}

/// Joins the parts; a message with nothing of substance says that the user has nothing more.
fn finish(mut msg: Message<'_>, rules: &SpeakerRules) -> String {
    if !msg.said_something {
        let line = msg
            .pick(&[&rules.said_all, &rules.fillers])
            .unwrap_or_else(|| {
                rules
                    .fillers
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "...".into())
            });
        msg.mem.remember(&line);
        // The closing or the opener came first; the admission goes before a factual question.
        let at = msg.parts.len().min(1);
        msg.parts.insert(at, line);
    }
    msg.parts.join(" ")
}

/// What landed, in the user's own terms: a feeling of the scenario's that the reply named, else a
/// specific of theirs it picked up.
fn acknowledge(msg: &mut Message<'_>, profile: &Profile, reply: &str) {
    let (s, rules) = (&profile.scenario, &profile.speaker);
    let padded = normalize(reply);
    let named = |items: &[String]| {
        items
            .iter()
            .find(|f| padded.contains(normalize(f).as_str()))
            .cloned()
    };
    let filled = |templates: &[String], slot: &str, value: &str| -> Vec<String> {
        templates.iter().map(|t| fill(t, slot, value)).collect()
    };
    let mut pools: Vec<Vec<String>> = Vec::new();
    if let Some(f) = named(&s.feelings) {
        pools.push(filled(&rules.landed.feeling, "feeling", &f));
    }
    if let Some(sp) = named(&s.specifics) {
        pools.push(filled(&rules.landed.specific, "specific", &sp));
    }
    let refs: Vec<&[String]> = pools.iter().map(Vec::as_slice).collect();
    msg.say_from(&refs);
}

/// Answers the reply's questions: a hidden fact one of them asks about, else (a guarded avoidant
/// user declines) the scenario's answer to the first question of a known kind, else the user says
/// there is no more to tell. A question of no known kind beside a reaction ("Have you considered
/// therapy?" in a piece of advice) is answered by the reaction. Returns whether a hidden fact came
/// out.
fn answer(
    msg: &mut Message<'_>,
    profile: &Profile,
    asked: &[&str],
    emotion: u8,
    reacted: bool,
) -> bool {
    let (s, persona, rules) = (&profile.scenario, &profile.persona, &profile.speaker);
    let question_text = normalize(&asked.join(" "));
    let by_cue = (0..s.hidden_facts.len())
        .find(|&i| !msg.mem.revealed[i] && asks_about(&s.hidden_facts[i], &question_text));
    if let Some(i) = by_cue {
        msg.mem.revealed[i] = true;
        msg.say(s.hidden_facts[i].text.clone());
        return true;
    }
    if persona.character == Character::Avoidant && emotion < GUARDED_BELOW {
        msg.say_from(&[&rules.decline]);
        return false;
    }
    let kind = asked.iter().find_map(|q| question_kind(rules, q));
    if kind.is_none() && reacted {
        return false;
    }
    let answers = |k: QuestionKind| s.answers.get(&k).map_or(&[][..], Vec::as_slice);
    let answered = match kind {
        Some(k) => msg.say_from(&[answers(k)]),
        // A question of no known kind ("Do you want to talk about it?"): whatever the user has
        // left to tell, what happened first.
        None => {
            let order = [
                QuestionKind::Happened,
                QuestionKind::Feel,
                QuestionKind::Need,
                QuestionKind::Who,
                QuestionKind::Tried,
            ];
            let pools: Vec<&[String]> = order.iter().map(|k| answers(*k)).collect();
            msg.say_from(&pools)
        }
    };
    if !answered {
        msg.say_from(&[&persona.voice.nothing_more, &rules.said_all]);
    }
    false
}

/// True when a question (normalized, see [`normalize`]) names one of `fact`'s cues.
pub fn asks_about(fact: &HiddenFact, question: &str) -> bool {
    fact.cues
        .iter()
        .any(|c| question.contains(normalize(c).as_str()))
}

/// The kind of `question` by the phrases of data/speaker.yaml: the first kind, in
/// [`QuestionKind::ALL`] order, with a phrase in it (whole words).
pub fn question_kind(rules: &SpeakerRules, question: &str) -> Option<QuestionKind> {
    let padded = normalize(question);
    QuestionKind::ALL.into_iter().find(|k| {
        rules
            .questions
            .get(k)
            .is_some_and(|ps| ps.iter().any(|p| padded.contains(normalize(p).as_str())))
    })
}
