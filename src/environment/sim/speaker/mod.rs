//! The Speaker: the user's next message, keyed to the reply it answers. It reads what the appraiser
//! found (the same findings that moved the emotion) and composes the message from parts, in the
//! order docs/SCENARIOS.md gives: an opener in the persona's voice, a reaction to the reply, an
//! answer to its question, a fact trust brings out, a line for the mood, a hint, a question back,
//! and the factual question due. No sentence is said twice in a dialogue; when the material runs
//! out the user says so. Deterministic given the dialogue's RNG.
//!
//! The message reads as one person talking: the opener runs into the sentence after it with a
//! comma, each part ends a sentence, and the opener's mood follows the emotion's change. What the
//! user answers follows what happened: a complaint only for a fault the appraisal found and only
//! after a reply that did not raise the emotion, an acknowledgement only of what the reply
//! affirmed (not "nothing foolish"), and a suggestion taken up only when one was made.

pub mod reaction;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::emotion::Bucket;
use super::text::{affirmed, normalize, said_sentences};
use super::Appraisal;
use crate::profile::persona::Voice;
use crate::profile::speech::{fill, END_MARKS};
use crate::profile::{
    Character, HiddenFact, Profile, QuestionKind, Reaction, Scenario, SpeakerRules,
};
use reaction::{echoes, found, questions, reaction, Heard};

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
    /// True when no sentence of `line` has been said yet. Sentences are read as `replay user`
    /// reads a turn ([`said_sentences`]): a line that starts with the persona's opener ("I mean,
    /// it's ...") says "I mean".
    fn fresh(&self, voice: &Voice, line: &str) -> bool {
        said_sentences(Some(voice), line)
            .iter()
            .all(|s| !self.said.contains(s))
    }

    fn remember(&mut self, voice: &Voice, line: &str) {
        self.said.extend(said_sentences(Some(voice), line));
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
    voice: &'m Voice,
    rng: &'m mut ChaCha8Rng,
    rules: &'m SpeakerRules,
    /// The reply asked yes or no and nothing else: an answer sentence ("Maybe.") may be said.
    answerable: bool,
    /// The persona's voice opener, joined to the first part when the message is finished.
    opener: Option<String>,
    parts: Vec<String>,
    /// Parts other than the opener and the factual question.
    said_something: bool,
}

impl Message<'_> {
    /// A fresh line from the first pool that has one, picked at random within that pool.
    fn pick(&mut self, pools: &[&[String]]) -> Option<String> {
        self.pick_with(pools, |l| Some(l.to_string()))
    }

    /// As [`Message::pick`], each line as [`fit`] says it: for the lines that say how
    /// the user is or what they know (openers, moods, answers, fillers), which can open with an
    /// answer sentence. An acknowledgement ("Yes, guilty.") or a reaction answers what the reply
    /// said, not its question, and keeps it.
    fn pick_fitted(&mut self, pools: &[&[String]]) -> Option<String> {
        let (rules, answerable) = (self.rules, self.answerable);
        self.pick_with(pools, |l| fit(rules, answerable, l))
    }

    fn pick_with(
        &mut self,
        pools: &[&[String]],
        said_as: impl Fn(&str) -> Option<String>,
    ) -> Option<String> {
        for pool in pools {
            let mut fresh: Vec<String> = pool
                .iter()
                .filter_map(|l| said_as(l))
                .filter(|l| self.mem.fresh(self.voice, l))
                .collect();
            if !fresh.is_empty() {
                let i = self.rng.random_range(0..fresh.len());
                return Some(fresh.swap_remove(i));
            }
        }
        None
    }

    fn say(&mut self, line: String) {
        self.mem.remember(self.voice, &line);
        self.parts.push(line);
        self.said_something = true;
    }

    fn say_from(&mut self, pools: &[&[String]]) -> bool {
        let line = self.pick(pools);
        self.say_some(line)
    }

    fn say_fitted(&mut self, pools: &[&[String]]) -> bool {
        let line = self.pick_fitted(pools);
        self.say_some(line)
    }

    fn say_some(&mut self, line: Option<String>) -> bool {
        line.map(|l| self.say(l)).is_some()
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
        mem.remember(&persona.voice, &scenario.opening);
    }
    let bucket = Bucket::of(input.emotion);
    let heard = Heard {
        echoes_user: echoes(input.reply, &mem.said),
        suggested: input.appraisal.suggested,
    };
    let reacted = reaction(input.appraisal, input.delta, heard);
    let asked = questions(input.reply);
    let mut msg = Message {
        mem,
        voice: &persona.voice,
        rng,
        rules,
        answerable: answerable(rules, &asked),
        opener: None,
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
        return finish(msg, profile);
    }
    match bucket {
        Bucket::S => {
            msg.say_from(&[&u.S]);
            return finish(msg, profile);
        }
        Bucket::F => {
            if let Some(r) = reacted {
                say_reaction(&mut msg, profile, r, input.reply);
            }
            msg.say_from(&[&u.F]);
            return finish(msg, profile);
        }
        _ => {}
    }
    // The opener's mood follows the change: the warm openers after a rise from 40 (a hedge, "I
    // suppose", would not go before what landed), the guarded ones ("Come on.", "Whatever.")
    // only after a fall below 40, the middle ones otherwise: a dismissive opener before an answer
    // to a question that did no harm reads as scorn for it.
    // One that judges the reply ("Good point.", "Thank you,") only before a message that answers
    // no question: before an answer it praises a point nobody made.
    let up = matches!(bucket, Bucket::A | Bucket::B);
    let voice = match input.delta.signum() {
        1 if up => &persona.voice.high,
        -1 if !up => &persona.voice.low,
        _ => &persona.voice.mid,
    };
    let voice: Vec<String> = voice
        .iter()
        .filter(|o| asked.is_empty() || !rules.judges_reply(o))
        .cloned()
        .collect();
    if msg.rng.random_bool(rules.opener_rate) {
        if let Some(o) = msg.pick_fitted(&[&voice]) {
            msg.mem.remember(&persona.voice, &o);
            msg.opener = Some(o);
        }
    }
    match reacted {
        Some(r) => say_reaction(&mut msg, profile, r, input.reply),
        None if input.delta > 0 => acknowledge(&mut msg, profile, input.reply),
        None => {}
    }
    let mut revealed_now = false;
    if !asked.is_empty() && !reacted.is_some_and(Reaction::not_listening) {
        let stacked = Reaction::Stacked;
        if stacked.agrees_with(input.delta) && found(stacked, input.appraisal, input.delta, heard) {
            msg.say_from(&[persona.voice.lines(stacked), rules.lines(stacked)]);
        }
        let mood = mood(profile, bucket, input.delta, true);
        revealed_now = answer(
            &mut msg,
            profile,
            &asked,
            input.emotion,
            reacted.is_some(),
            &mood,
        );
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
        // Nothing in the reply to answer: how the user feels now.
        let [own, middle] = mood(profile, bucket, input.delta, false);
        msg.say_fitted(&[&own, &middle]);
    }
    // A hint says what the user wishes someone would ask or do; right after a reply that asked
    // what they need, it would presume the question was never put.
    let asked_need = asked
        .iter()
        .any(|q| question_kind(rules, q) == Some(QuestionKind::Need));
    let hint_now = !msg.mem.hinted
        && !asked_need
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
        msg.mem.remember(&persona.voice, q);
        msg.parts.push(q.to_string());
    }
    finish(msg, profile)
}

/// The scenario's lines for how the user feels now, by bucket (a fall makes a warm user cool),
/// then the middle bucket's for when those are used up. A line that judges the reply
/// ([`SpeakerRules::judges_reply`]: "That helps.", "You don't get it.") is said only where
/// [`verdict_borne`], and never as the `answering` of a question: "How do you feel?" is not
/// answered with "That helps.", nor with a question of the user's own.
fn mood(profile: &Profile, bucket: Bucket, delta: i32, answering: bool) -> [Vec<String>; 2] {
    let (u, rules) = (&profile.scenario.utterances, &profile.speaker);
    let lines = match bucket {
        Bucket::A if delta >= 0 => Bucket::A,
        Bucket::A | Bucket::B => Bucket::B,
        _ => Bucket::C,
    };
    let said = |b: Bucket| -> Vec<String> {
        let pool = match b {
            Bucket::A => &u.A,
            Bucket::B => &u.B,
            _ => &u.C,
        };
        pool.iter()
            .filter(|l| !rules.judges_reply(l) || (!answering && verdict_borne(b, delta)))
            // A mood line that asks ("So is it serious or not?") answers no question.
            .filter(|l| !answering || !l.trim_end().ends_with('?'))
            .cloned()
            .collect()
    };
    let middle = if lines == Bucket::B {
        Vec::new()
    } else {
        said(Bucket::B)
    };
    [said(lines), middle]
}

/// Whether the change bears out a verdict on the reply among the mood lines of `bucket`: a warm
/// one ("That helps.", `A`) after a rise, a cold one ("You don't get it.", `C`) after a fall, a
/// middling one ("I hear you, I'm just not there yet.", `B`) after anything. The one home of
/// this rule, which the speaker follows and `replay user` checks.
pub fn verdict_borne(bucket: Bucket, delta: i32) -> bool {
    match bucket {
        Bucket::A => delta > 0,
        Bucket::C => delta < 0,
        _ => true,
    }
}

/// A line for reaction `r`: the scenario's own first, then the persona's, then the speaker's
/// generic ones.
fn say_reaction(msg: &mut Message<'_>, profile: &Profile, r: Reaction, reply: &str) {
    let own = own_lines(profile, r, reply);
    msg.say_from(&[
        &own,
        profile.persona.voice.lines(r),
        profile.speaker.lines(r),
    ]);
}

/// Joins the parts into one message; a message with nothing of substance says that the user has
/// nothing more. The opener goes before a first sentence of `opener_min_words` or more, and a
/// person who writes in lowercase writes the whole message so.
fn finish(msg: Message<'_>, profile: &Profile) -> String {
    let lowercase = msg.voice.lowercase;
    let text = compose(msg, profile);
    match lowercase {
        true => text.to_lowercase(),
        false => text,
    }
}

fn compose(mut msg: Message<'_>, profile: &Profile) -> String {
    let rules = &*profile.speaker;
    if !msg.said_something {
        let line = msg
            .pick_fitted(&[&rules.said_all, &rules.fillers])
            .unwrap_or_else(|| {
                rules
                    .fillers
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "...".into())
            });
        msg.mem.remember(msg.voice, &line);
        // A closing came first; the admission goes before a factual question.
        let at = msg.parts.len().min(1);
        msg.parts.insert(at, line);
    }
    let body = msg
        .parts
        .iter()
        .map(|p| end_sentence(p))
        .collect::<Vec<_>>()
        .join(" ");
    let first_words = crate::sim::text::sentences(&body)
        .first()
        .map_or(0, |s| crate::sim::text::words(s).len());
    match msg.opener {
        // An opener that ends on the word the message starts with ("I guess maybe" + "Maybe.")
        // or says a word of it again would stammer, and one before a fragment ("I suppose,
        // guilty") reads as glued: the message goes without it.
        Some(o) if !repeats_into(&o, &body) && first_words >= rules.opener_min_words => {
            join_opener(&o, &body, |w| keeps_capital(&profile.scenario, w))
        }
        _ => body,
    }
}

/// True when `opener` would stammer into `body`: its last word is the body's first (case aside),
/// or a word of it of [`ECHO_LETTERS`] letters or more comes again ("Honestly, you remembered,
/// which honestly means a lot"; "Never mind, dear. You're kind, dear").
fn repeats_into(opener: &str, body: &str) -> bool {
    let opener = crate::sim::text::words(opener);
    let body = crate::sim::text::words(body);
    let stammers = opener.last().is_some() && opener.last() == body.first();
    stammers
        || opener
            .iter()
            .any(|w| w.chars().count() >= ECHO_LETTERS && body.contains(w))
}

/// Letters from which an opener's word said again in the message reads as a repeated filler.
const ECHO_LETTERS: usize = 4;

/// `part` ending a sentence: a full stop added when it ends on none ("u stopped halfway thru"),
/// so that the next part does not run into it.
fn end_sentence(part: &str) -> String {
    let part = part.trim_end();
    match part.ends_with(END_MARKS) {
        true => part.to_string(),
        false => format!("{part}."),
    }
}

/// An opener run into the message as one sentence: a complete opener ("I don't know.") stands
/// before it; any other ("I mean,", "kinda") takes a comma, and the word after it loses its capital
/// unless `keeps` says it has one of its own ("I", a name): "Okay, so, she used to ...".
pub fn join_opener(opener: &str, body: &str, keeps: impl Fn(&str) -> bool) -> String {
    if body.is_empty() {
        return end_sentence(opener);
    }
    if opener.trim_end().ends_with(END_MARKS) {
        return format!("{} {body}", opener.trim_end());
    }
    let opener = opener.trim_end().trim_end_matches(',');
    let word = leading_word(body.split_whitespace().next().unwrap_or(""));
    let body = match keeps(&word) {
        true => body.to_string(),
        false => {
            let mut chars = body.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_lowercase().chain(chars).collect::<String>()
            })
        }
    };
    format!("{opener}, {body}")
}

/// The word a whitespace-separated token starts with: its letters, digits and apostrophes up to
/// the first other mark ("She," -> "She", "I'm" -> "I'm").
pub fn leading_word(token: &str) -> String {
    token
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '\'' || *c == '\u{2019}')
        .collect()
}

/// Whether `word`, first after an opener, keeps its capital: "I" and its contractions, and a word
/// the scenario's own lines capitalize inside a sentence (a name, "Sundays").
pub fn keeps_capital(scenario: &Scenario, word: &str) -> bool {
    let bare = word.replace('\u{2019}', "'");
    if bare == "I" || bare.starts_with("I'") {
        return true;
    }
    if !word.starts_with(char::is_uppercase) {
        return true;
    }
    scenario.lines().any(|l| capitalized_inside(l, word))
}

/// True when `word` stands capitalized inside a sentence of `line`, not first in it.
pub fn capitalized_inside(line: &str, word: &str) -> bool {
    let mut first = true;
    for w in line.split_whitespace() {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
        if !first && bare == word {
            return true;
        }
        first = w.ends_with(['.', '!', '?', ':', '"']);
    }
    false
}

/// What landed, in the user's own terms: a feeling of the scenario's that the reply named, else a
/// specific of theirs it picked up; either only where the reply affirmed it, not under a negation
/// ("nothing foolish"). A feeling the user had said already is agreed with, not discovered. The
/// persona's own lines come before data/speaker.yaml's.
fn acknowledge(msg: &mut Message<'_>, profile: &Profile, reply: &str) {
    let (s, rules) = (&profile.scenario, &profile.speaker);
    let mine = &profile.persona.voice.landed;
    let padded = normalize(reply);
    let named = |items: &[String]| {
        items
            .iter()
            .find(|f| affirmed(&padded, &normalize(f), rules.negation()))
            .cloned()
    };
    let filled = |templates: &[String], slot: &str, value: &str| -> Vec<String> {
        templates.iter().map(|t| fill(t, slot, value)).collect()
    };
    let mut pools: Vec<Vec<String>> = Vec::new();
    if let Some(f) = named(&s.feelings) {
        let key = normalize(&f);
        let said = msg.mem.said.iter().any(|sent| sent.contains(key.as_str()));
        let (own, generic) = match said {
            true => (&mine.feeling_said, &rules.landed.feeling_said),
            false => (&mine.feeling, &rules.landed.feeling),
        };
        pools.push(filled(own, "feeling", &f));
        pools.push(filled(generic, "feeling", &f));
    }
    if let Some(sp) = named(&s.specifics) {
        pools.push(filled(&mine.specific, "specific", &sp));
        pools.push(filled(&rules.landed.specific, "specific", &sp));
    }
    let refs: Vec<&[String]> = pools.iter().map(Vec::as_slice).collect();
    msg.say_from(&refs);
}

/// Answers the reply's questions: a hidden fact one of them asks about, else (a guarded avoidant
/// user declines) the scenario's answer to the first question of a known kind, else the user says
/// there is no more to tell. A question of no known kind beside a reaction ("Have you considered
/// therapy?" in a piece of advice) is answered by the reaction. A question whose kind has no
/// answer left is still taken up where the user has one: how they feel now (`mood`) for a
/// question about feelings, the need itself (a hint not yet given) for a question about what
/// would help. "I think that covers it" answers "How are you feeling right now?" with nothing.
/// Returns whether a hidden fact came out.
fn answer(
    msg: &mut Message<'_>,
    profile: &Profile,
    asked: &[&str],
    emotion: u8,
    reacted: bool,
    mood: &[Vec<String>; 2],
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
        msg.say_from(&[&persona.voice.decline, &rules.decline]);
        return false;
    }
    let kind = asked.iter().find_map(|q| question_kind(rules, q));
    if kind.is_none() && reacted {
        return false;
    }
    let answers = |k: QuestionKind| s.answers.get(&k).map_or(&[][..], Vec::as_slice);
    let answered = match kind {
        Some(k) if msg.say_fitted(&[answers(k)]) => true,
        Some(k) => match Fallback::of(k) {
            Some(Fallback::Mood) => msg.say_fitted(&[&mood[0], &mood[1]]),
            Some(Fallback::Need) if !msg.mem.hinted => {
                msg.mem.hinted = msg.say_from(&[&s.hints]);
                msg.mem.hinted
            }
            _ => false,
        },
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
            msg.say_fitted(&pools)
        }
    };
    if !answered {
        // Nothing left of this kind: said in the question's terms where there are lines for it.
        let ([by_kind, generic], own) = match kind {
            Some(k) => (rules.said_all_for(k), persona.voice.said_all_for(k)),
            None => ([&[][..], &rules.said_all[..]], &[][..]),
        };
        msg.say_fitted(&[own, by_kind, &persona.voice.nothing_more, generic]);
    }
    false
}

/// What a question of a known kind is still answered from once the scenario's answers of that
/// kind are used up: the one home of this rule, which the speaker follows and `replay user` reads
/// answers by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// How the user feels now (the scenario's mood lines): a question about feelings.
    Mood,
    /// The need itself (the scenario's hints, once): a question about what would help.
    Need,
}

impl Fallback {
    pub fn of(kind: QuestionKind) -> Option<Fallback> {
        match kind {
            QuestionKind::Feel => Some(Fallback::Mood),
            QuestionKind::Need => Some(Fallback::Need),
            QuestionKind::Tried | QuestionKind::Who | QuestionKind::Happened => None,
        }
    }
}

/// `line` as a message can say it: unless the reply was `answerable`, without a leading answer
/// sentence ("Maybe. I keep changing my mind." -> "I keep changing my mind."), and not at all when
/// that is all it says ("Sort of.").
fn fit(rules: &SpeakerRules, answerable: bool, line: &str) -> Option<String> {
    match rules.after_answer(line) {
        Some(rest) if !answerable => (!rest.is_empty()).then(|| rest.to_string()),
        _ => Some(line.to_string()),
    }
}

/// True when a reply that asked `asked` (its question sentences) leaves room for an answer
/// sentence ("Maybe."): it asked yes or no ([`SpeakerRules::is_yes_no`]) and nothing else. After
/// a statement ("That's a lot to carry.") a bare "Maybe." hedges what nobody proposed.
pub fn answerable(rules: &SpeakerRules, asked: &[&str]) -> bool {
    !asked.is_empty() && asked.iter().all(|q| rules.is_yes_no(q))
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
