//! `replay user`: how the simulated user talks in logged dialogues, read from the text alone.
//!
//! - **Distinct sentences** per dialogue, over the user's turns after the opening.
//! - **Repeat rate**: the share of user turns (after the opening) holding a sentence that the same
//!   user already said in that dialogue, the opening included; also over the dialogues that ran
//!   their whole length.
//! - **Responsiveness** (docs/SCENARIOS.md, "Measuring the user"): of the policy turns that asked a
//!   question (a sentence ending in '?') or made a suggestion (an advice cue of data/lexicon.yaml),
//!   the share whose next user turn holds a line that answers it. For a question: a hidden fact
//!   whose cue is in the question, a scenario answer of the question's kind (any kind when the
//!   kind is unknown; an advice line, when the question of no known kind came with a suggestion;
//!   a mood line for a question about feelings, a hint for one about what would help), a
//!   decline, a "nothing more" line, or "one thing at a time". For a suggestion: an
//!   advice line (taken up or pushed back), the scenario's, the persona's or the speaker's. For both: a line
//!   saying the reply was not talking to the user (meta, off topic, incoherent, unsafe). A line
//!   counts when its words are in the turn in order (normalized). Lines are the current
//!   catalog's, so old logs are measured by the same rule.
//!
//! - **Fit** (`user_fit.rs`): whether the user's words fit what happened: glued sentences,
//!   acknowledgements of what the reply did not affirm, complaints without their finding, lines
//!   whose sign disagrees with the emotion's change, and stock sentences shared across scenarios
//!   and personas.
//!
//! Sentences are compared normalized (case and punctuation aside), with the persona's voice opener
//! split off first, as the appraiser splits a user message.

use std::collections::BTreeSet;

use super::user_fit::{self, sentence_set, Fit, TurnFaults};
use crate::environment::episode::{End, EpisodeRecord, Turn};
use crate::environment::profile::{Catalog, QuestionKind, Reaction, Scenario};
use crate::environment::sim::lexicon::Lexicon;
use crate::environment::sim::speaker::reaction::questions;
use crate::environment::sim::speaker::{asks_about, question_kind, Fallback};
use crate::environment::sim::text::normalize;
use crate::report::Table;

/// What the policy's turn asked of the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub question: bool,
    pub suggestion: bool,
    pub kind: Option<QuestionKind>,
}

/// One policy turn that asked something, with the user's answer and the verdict.
#[derive(Clone, Debug)]
pub struct Judged<'a> {
    pub reply: &'a str,
    pub answer: &'a str,
    pub ask: Ask,
    pub responded: bool,
}

/// The counts over a set of dialogues.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Realism {
    pub dialogues: usize,
    pub user_turns: usize,
    pub distinct_sentences: usize,
    pub repeating_turns: usize,
    pub full_length_turns: usize,
    pub full_length_repeating: usize,
    pub asked: usize,
    pub asked_responded: usize,
    pub suggested: usize,
    pub suggested_responded: usize,
    /// Policy turns that asked or suggested (a turn doing both counts once).
    pub either: usize,
    pub either_responded: usize,
    /// Whether the user's words fit what happened.
    pub fit: Fit,
}

fn share(n: usize, d: usize) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

impl Realism {
    /// The column names of [`Realism::row`].
    pub const COLUMNS: [&'static str; 17] = [
        "log",
        "dialogues",
        "user turns",
        "distinct sentences per dialogue",
        "repeat rate",
        "repeat rate, full-length dialogues",
        "responsive to questions",
        "responsive to questions or suggestions",
        "glued",
        "openers before a fragment",
        "answer words out of place",
        "verdicts out of place",
        "register switches",
        "unfit acknowledgements",
        "complaints without their finding",
        "sign disagreements",
        "turns with a stock sentence",
    ];

    pub fn row(&self, name: &str) -> Vec<String> {
        let mut row = vec![
            name.to_string(),
            self.dialogues.to_string(),
            self.user_turns.to_string(),
            format!(
                "{:.1}",
                self.distinct_sentences as f64 / self.dialogues.max(1) as f64
            ),
            share(self.repeating_turns, self.user_turns),
            share(self.full_length_repeating, self.full_length_turns),
            format!(
                "{} ({}/{})",
                share(self.asked_responded, self.asked),
                self.asked_responded,
                self.asked
            ),
            format!(
                "{} ({}/{}; suggestions {}/{})",
                share(self.either_responded, self.either),
                self.either_responded,
                self.either,
                self.suggested_responded,
                self.suggested
            ),
        ];
        let f = &self.fit;
        let count = |n: usize| format!("{n} ({})", share(n, f.turns));
        row.extend([
            count(f.glued),
            count(f.fragment_openers),
            count(f.answer_words),
            count(f.verdicts),
            count(f.register_switches),
            count(f.unfit_acknowledgements),
            count(f.unmatched_complaints),
            count(f.sign_disagreements),
            count(f.stock_turns()),
        ]);
        row
    }
}

/// The rule's view of one scenario: the lines that answer a question or a suggestion.
struct Answers<'a> {
    scenario: &'a Scenario,
    catalog: &'a Catalog,
    persona: Option<&'a crate::environment::profile::Persona>,
}

impl Answers<'_> {
    fn question_lines(&self, q: &str, kind: Option<QuestionKind>) -> Vec<&str> {
        let s = self.scenario;
        let rules = &self.catalog.speaker;
        let padded = normalize(q);
        let mut out: Vec<&str> = s
            .hidden_facts
            .iter()
            .filter(|f| asks_about(f, &padded))
            .map(|f| f.text.as_str())
            .collect();
        for (k, lines) in &s.answers {
            if kind.is_none() || kind == Some(*k) {
                out.extend(lines.iter().map(String::as_str));
            }
        }
        // What the speaker says once a kind's answers are used up; any bucket's mood, since the
        // log does not say which was current.
        match kind.and_then(Fallback::of) {
            Some(Fallback::Mood) => {
                let u = &s.utterances;
                out.extend(u.A.iter().chain(&u.B).chain(&u.C).map(String::as_str));
            }
            Some(Fallback::Need) => out.extend(s.hints.iter().map(String::as_str)),
            None => {}
        }
        if let Some(k) = kind {
            out.extend(rules.said_all_for(k)[0].iter().map(String::as_str));
        }
        out.extend(
            rules
                .decline
                .iter()
                .chain(&rules.said_all)
                .map(String::as_str),
        );
        if let Some(p) = self.persona {
            if let Some(k) = kind {
                out.extend(p.voice.said_all_for(k).iter().map(String::as_str));
            }
            out.extend(p.voice.nothing_more.iter().map(String::as_str));
            out.extend(p.voice.decline.iter().map(String::as_str));
        }
        out.extend(self.lines(Reaction::Stacked));
        // The speaker says these without a leading answer sentence ("Maybe.") after a question
        // that does not ask yes or no.
        let fitted: Vec<&str> = out
            .iter()
            .filter_map(|l| rules.after_answer(l))
            .filter(|rest| !rest.is_empty())
            .collect();
        out.extend(fitted);
        out
    }

    /// The persona's and the speaker's lines for reaction `r`.
    fn lines(&self, r: Reaction) -> impl Iterator<Item = &str> {
        self.persona
            .map_or(&[][..], |p| p.voice.lines(r))
            .iter()
            .chain(self.catalog.speaker.lines(r))
            .map(String::as_str)
    }

    fn suggestion_lines(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for r in [Reaction::AdviceRejected, Reaction::AdviceWelcome] {
            if let Some(own) = self.scenario.reactions.get(&r) {
                out.extend(own.iter().map(String::as_str));
            }
            out.extend(self.lines(r));
        }
        out
    }

    fn not_listening_lines(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for r in Reaction::ALL.into_iter().filter(|r| r.not_listening()) {
            out.extend(self.lines(r));
        }
        out
    }
}

/// True when one of `lines` is in `turn` (both normalized: whole words, punctuation and case
/// aside, so an opener without a full stop, "idk Everyone ...", does not hide the line).
fn holds(turn: &str, lines: &[&str]) -> bool {
    lines.iter().any(|l| turn.contains(normalize(l).as_str()))
}

/// Adds one dialogue's counts to `acc` and returns its judged policy turns and its user turns'
/// faults (after the opening, in order).
pub fn measure<'a>(
    rec: &'a EpisodeRecord,
    catalog: &Catalog,
    lexicon: &Lexicon,
    acc: &mut Realism,
) -> (Vec<Judged<'a>>, Vec<TurnFaults>) {
    let faults = user_fit::check(rec, catalog, lexicon, &mut acc.fit);
    (measure_responses(rec, catalog, lexicon, acc), faults)
}

/// The repeat and responsiveness counts of one dialogue.
fn measure_responses<'a>(
    rec: &'a EpisodeRecord,
    catalog: &Catalog,
    lexicon: &Lexicon,
    acc: &mut Realism,
) -> Vec<Judged<'a>> {
    acc.dialogues += 1;
    let user: Vec<&str> = rec
        .turns
        .iter()
        .filter_map(|t| match t {
            Turn::User { text, .. } => Some(text.as_str()),
            Turn::Assistant { .. } => None,
        })
        .collect();
    let full_length = rec.end == Some(End::MaxTurns);
    let persona = catalog.personas.get(&rec.profile.persona);
    let voice = persona.map(|p| &p.voice);
    let mut said: BTreeSet<String> = user
        .first()
        .map(|o| sentence_set(o, voice))
        .unwrap_or_default();
    let mut distinct = BTreeSet::new();
    for text in user.iter().skip(1) {
        let now = sentence_set(text, voice);
        let repeats = now.iter().any(|s| said.contains(s));
        acc.user_turns += 1;
        acc.repeating_turns += usize::from(repeats);
        if full_length {
            acc.full_length_turns += 1;
            acc.full_length_repeating += usize::from(repeats);
        }
        distinct.extend(now.iter().cloned());
        said.extend(now);
    }
    acc.distinct_sentences += distinct.len();
    let Some(scenario) = catalog.scenarios.get(&rec.profile.scenario) else {
        return Vec::new();
    };
    let answers = Answers {
        scenario,
        catalog,
        persona: persona.map(|p| p.as_ref()),
    };
    let mut judged = Vec::new();
    let replies = rec.assistant_turns();
    for (i, (reply, _)) in replies.iter().enumerate() {
        let Some(answer) = user.get(i + 1) else {
            break;
        };
        let asked = questions(reply);
        let suggestion = lexicon.cues(reply, catalog.speaker.negation()).suggests();
        if asked.is_empty() && !suggestion {
            continue;
        }
        let kind = asked
            .iter()
            .find_map(|q| question_kind(&catalog.speaker, q));
        let said = normalize(answer);
        let elsewhere = holds(&said, &answers.not_listening_lines());
        let took_suggestion = holds(&said, &answers.suggestion_lines());
        // A question of no known kind inside a suggestion ("Have you considered therapy?") is
        // answered by taking up or pushing back the suggestion.
        let to_question = !asked.is_empty()
            && (elsewhere
                || holds(&said, &answers.question_lines(&asked.join(" "), kind))
                || (kind.is_none() && suggestion && took_suggestion));
        let to_suggestion = suggestion && (elsewhere || took_suggestion);
        let responded = to_question || to_suggestion;
        if !asked.is_empty() {
            acc.asked += 1;
            acc.asked_responded += usize::from(to_question);
        }
        if suggestion {
            acc.suggested += 1;
            acc.suggested_responded += usize::from(to_suggestion);
        }
        acc.either += 1;
        acc.either_responded += usize::from(responded);
        judged.push(Judged {
            reply,
            answer,
            ask: Ask {
                question: !asked.is_empty(),
                suggestion,
                kind,
            },
            responded,
        });
    }
    judged
}

/// The table over several named sets of dialogues.
pub fn realism_table(rows: &[(String, Realism)]) -> Table {
    let mut t = Table::new(Realism::COLUMNS);
    for (name, r) in rows {
        t.push_row(r.row(name));
    }
    t
}

/// One dialogue quoted for a spot check: every turn, after each policy turn that asked something
/// what it asked and the rule's verdict on the answer, and after each user turn that does not fit
/// what happened, why.
pub fn quote(rec: &EpisodeRecord, judged: &[Judged<'_>], faults: &[TurnFaults]) -> String {
    let mut out = format!(
        "#### {}:{} (seed {}, end {})\n\n",
        rec.profile.scenario,
        rec.profile.persona,
        rec.simulator.seed,
        crate::environment::episode::end_word(rec.end)
    );
    let mut user_turns: usize = 0;
    for t in &rec.turns {
        match t {
            Turn::User { text, emotion, .. } => {
                out.push_str(&format!("- **user** ({emotion}): {text}\n"));
                let fault = user_turns
                    .checked_sub(1)
                    .and_then(|k| faults.get(k))
                    .and_then(user_fit::describe);
                if let Some(why) = fault {
                    out.push_str(&format!("  - *does not fit:* {why}\n"));
                }
                user_turns += 1;
            }
            Turn::Assistant { text, .. } => {
                out.push_str(&format!("- **policy**: {text}\n"));
                if let Some(j) = judged.iter().find(|j| std::ptr::eq(j.reply, text.as_str())) {
                    let mut what = Vec::new();
                    if j.ask.question {
                        what.push(format!(
                            "a question ({})",
                            j.ask.kind.map_or("kind unknown", QuestionKind::as_str)
                        ));
                    }
                    if j.ask.suggestion {
                        what.push("a suggestion".to_string());
                    }
                    out.push_str(&format!(
                        "  - *asked:* {}; *next user turn responds:* {}\n",
                        what.join(" and "),
                        if j.responded { "yes" } else { "no" }
                    ));
                }
            }
        }
    }
    out
}
