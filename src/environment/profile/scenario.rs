//! Scenarios: the situation the simulated user brings, what they hide, what helps and what hurts,
//! and what they say at each emotional level. Loaded from `scenarios/<id>.yaml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::check::{at_least, id_matches_file, non_empty};
use super::need::HiddenNeed;
use super::speech::{QuestionKind, Reaction};
use crate::error::{Error, Result};

/// A fact the user keeps back until trust grows or the policy asks about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HiddenFact {
    /// What the user says when they reveal it.
    pub text: String,
    /// Words that, in a question from the policy, make the user reveal it.
    pub cues: Vec<String>,
}

/// What the user says, by emotion bucket: S >= 100, A >= 70, B >= 40, C >= 10, F < 10
/// (docs/SCENARIOS.md, "How the user talks (the Speaker)").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Utterances {
    /// Resolved: the user's closing words when emotion reaches 100.
    pub S: Vec<String>,
    /// Opening up, warmer (70-99).
    pub A: Vec<String>,
    /// Engaged but unsure (40-69).
    pub B: Vec<String>,
    /// Hurt, guarded, curt (10-39).
    pub C: Vec<String>,
    /// Giving up: the user's last words as they leave (below 10).
    pub F: Vec<String>,
}

/// A factual question the user asks at a given turn, with its answer key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactualTurn {
    /// Asked in the user message that follows the policy's `after_turn`-th reply (1-based).
    pub after_turn: u32,
    /// The question, as the user asks it.
    pub question: String,
    /// The correct answer.
    pub answer: String,
    /// Other accepted forms of the answer.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// A wrong answer the user asserts ("I'm pretty sure it's ..."), if any.
    #[serde(default)]
    pub belief: Option<String>,
}

/// One scenario: the situation, the hidden need, and the user's lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Identifier, equal to the file stem.
    pub id: String,
    /// Life topic (grief, job loss, ...), snake_case.
    pub topic: String,
    /// One-line title for reports.
    pub title: String,
    /// What would actually help (hidden from the policy).
    pub need: HiddenNeed,
    /// Personas (ids) that fit this scenario; profiles pair the scenario with these.
    pub personas: Vec<String>,
    /// Overrides the difficulty's start emotion for this scenario.
    #[serde(default)]
    pub start_emotion: Option<u8>,
    /// The user's backstory, known to the simulator, never shown to the policy.
    pub background: String,
    /// The user's first message.
    pub opening: String,
    /// Feelings a validating reply could name (e.g. "ashamed", "scared").
    pub feelings: Vec<String>,
    /// Concrete details a reflective reply could pick up (e.g. "eight years", "the warehouse").
    pub specifics: Vec<String>,
    /// Facts revealed over the dialogue, in order.
    pub hidden_facts: Vec<HiddenFact>,
    /// Lines that hint at the hidden need; spoken only by users who are not guarded.
    pub hints: Vec<String>,
    /// Example replies that would help this user (prototypes for the appraiser).
    pub helps: Vec<String>,
    /// Example replies that would hurt this user (prototypes for the appraiser).
    pub hurts: Vec<String>,
    /// How the user answers each kind of question (what happened, how they feel, who is
    /// involved, what they have tried, what they need); used once each, in order of need.
    #[serde(default)]
    pub answers: BTreeMap<QuestionKind, Vec<String>>,
    /// Questions the user asks back now and then, once they trust the listener.
    #[serde(default)]
    pub asks: Vec<String>,
    /// The user's own lines for particular kinds of reply (advice, minimizing, ...); the speaker's
    /// generic ones (data/speaker.yaml) follow when these are used up.
    #[serde(default)]
    pub reactions: BTreeMap<Reaction, Vec<String>>,
    /// What the user says at each emotional level, whatever the reply was.
    pub utterances: Utterances,
    /// Factual questions the user asks during the dialogue.
    #[serde(default)]
    pub factual: Vec<FactualTurn>,
    /// Where the scenario was loaded from (not in the YAML).
    #[serde(skip)]
    pub source: PathBuf,
}

impl Scenario {
    /// Loads and validates one scenario file (persona references are checked by the catalog).
    pub fn load(path: &Path) -> Result<Self> {
        let mut scenario: Scenario = super::yaml::read_yaml(path)?;
        scenario.source = path.to_path_buf();
        scenario.validate()?;
        Ok(scenario)
    }

    /// Every line the user can say or that tells their story: [`Scenario::user_lines`], the
    /// background and the factual questions.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.user_lines()
            .into_iter()
            .map(|(_, l)| l)
            .chain([self.background.as_str()])
            .chain(self.factual.iter().map(|q| q.question.as_str()))
    }

    /// Checks every field; errors name the file and the field.
    pub fn validate(&self) -> Result<()> {
        let f = self.source.as_path();
        id_matches_file(f, &self.id)?;
        for (field, text) in [
            ("topic", &self.topic),
            ("title", &self.title),
            ("background", &self.background),
            ("opening", &self.opening),
        ] {
            non_empty(f, field, text)?;
        }
        at_least(f, "personas", &self.personas, 1)?;
        at_least(f, "feelings", &self.feelings, 1)?;
        at_least(f, "specifics", &self.specifics, 2)?;
        at_least(f, "hints", &self.hints, 1)?;
        at_least(f, "helps", &self.helps, 2)?;
        at_least(f, "hurts", &self.hurts, 2)?;
        self.validate_facts()?;
        let u = &self.utterances;
        for (bucket, lines, min) in [
            ("S", &u.S, 1),
            ("A", &u.A, 3),
            ("B", &u.B, 3),
            ("C", &u.C, 3),
            ("F", &u.F, 1),
        ] {
            at_least(f, &format!("utterances.{bucket}"), lines, min)?;
        }
        self.validate_speech()?;
        if let Some(start) = self.start_emotion {
            if !(10..100).contains(&start) {
                return Err(Error::input(f, "start_emotion", "must be in 10..=99"));
            }
        }
        self.validate_factual()
    }

    fn validate_facts(&self) -> Result<()> {
        let f = self.source.as_path();
        if self.hidden_facts.is_empty() {
            return Err(Error::input(f, "hidden_facts", "needs at least 1 fact"));
        }
        for (i, fact) in self.hidden_facts.iter().enumerate() {
            non_empty(f, &format!("hidden_facts[{i}].text"), &fact.text)?;
            at_least(f, &format!("hidden_facts[{i}].cues"), &fact.cues, 1)?;
        }
        Ok(())
    }

    /// The lines keyed to a reply: none empty, `asks` are questions, and no sentence of the user's
    /// said twice across the file (the speaker never repeats one, so a duplicate is dead material).
    fn validate_speech(&self) -> Result<()> {
        let f = self.source.as_path();
        for (k, lines) in &self.answers {
            at_least(f, &format!("answers.{}", k.as_str()), lines, 1)?;
        }
        for (r, lines) in &self.reactions {
            at_least(f, &format!("reactions.{}", r.as_str()), lines, 1)?;
        }
        for (i, q) in self.asks.iter().enumerate() {
            if !q.trim_end().ends_with('?') {
                return Err(Error::input(
                    f,
                    format!("asks[{i}]"),
                    format!("`{q}` is not a question: end it with '?'"),
                ));
            }
        }
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (field, line) in self.user_lines() {
            for s in super::speech::sentences(line) {
                let key = s.to_lowercase();
                // Short sentences ("Okay.", "Thank you.") may recur across lines.
                if key.split_whitespace().count() < 3 {
                    continue;
                }
                if let Some(first) = seen.insert(key, field.clone()) {
                    return Err(Error::input(
                        f,
                        field,
                        format!(
                            "the sentence `{s}` is already in {first}; the user never says a \
                             sentence twice in a dialogue, so reword one of them"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every line the user can say, with its field (`utterances.B[2]`).
    pub fn user_lines(&self) -> Vec<(String, &str)> {
        let mut out = vec![("opening".to_string(), self.opening.as_str())];
        for (i, fact) in self.hidden_facts.iter().enumerate() {
            out.push((format!("hidden_facts[{i}].text"), fact.text.as_str()));
        }
        out.extend(named("hints", &self.hints));
        let u = &self.utterances;
        for (b, lines) in [
            ("S", &u.S),
            ("A", &u.A),
            ("B", &u.B),
            ("C", &u.C),
            ("F", &u.F),
        ] {
            out.extend(named(&format!("utterances.{b}"), lines));
        }
        for (k, lines) in &self.answers {
            out.extend(named(&format!("answers.{}", k.as_str()), lines));
        }
        out.extend(named("asks", &self.asks));
        for (r, lines) in &self.reactions {
            out.extend(named(&format!("reactions.{}", r.as_str()), lines));
        }
        out
    }

    fn validate_factual(&self) -> Result<()> {
        let f = self.source.as_path();
        let mut last = 0;
        for (i, q) in self.factual.iter().enumerate() {
            let field = |name: &str| format!("factual[{i}].{name}");
            non_empty(f, &field("question"), &q.question)?;
            non_empty(f, &field("answer"), &q.answer)?;
            if q.after_turn <= last {
                return Err(Error::input(
                    f,
                    field("after_turn"),
                    "must be >= 1 and increase from one factual turn to the next",
                ));
            }
            last = q.after_turn;
            if let Some(belief) = &q.belief {
                let same = |a: &String| a.trim().eq_ignore_ascii_case(belief.trim());
                if same(&q.answer) || q.aliases.iter().any(same) {
                    return Err(Error::input(
                        f,
                        field("belief"),
                        "the wrong belief equals the answer or an alias; make it wrong",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `lines` named `field[i]`.
fn named<'a>(field: &str, lines: &'a [String]) -> Vec<(String, &'a str)> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("{field}[{i}]"), l.as_str()))
        .collect()
}
