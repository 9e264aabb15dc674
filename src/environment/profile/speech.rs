//! What a user says in words, as data: the kinds of question and of reply a simulated user answers
//! (scenarios key their own lines by them), and `data/speaker.yaml`, the phrases that tell the
//! kinds of question apart and the persona-neutral lines the speaker falls back on.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A kind of reply the user answers in words (data/speaker.yaml `reactions`; a scenario's own
/// `reactions` come first for the ones it lists).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    /// The safety screen fired: the user leaves.
    Unsafe,
    /// The user's own words given back.
    Parroted,
    /// Talking about the message instead of to the person.
    Meta,
    /// Nothing to do with what the user said.
    OffTopic,
    /// Words that do not hang together.
    Incoherent,
    /// The reply stopped mid-sentence.
    CutOff,
    /// The reply said things about the user they never said, or spoke of someone they lost as alive.
    Misread,
    /// The reply raised a danger the user never raised.
    Alarmed,
    /// A story about the listener.
    SelfFocus,
    Minimize,
    Moralize,
    /// Advice before the user is ready for it, or advice that missed.
    AdviceRejected,
    /// A suggestion that landed.
    AdviceWelcome,
    Platitude,
    /// The listener said the same thing again.
    Repeated,
    /// The listener put it the same way as in earlier replies: the same frame, new words.
    Formulaic,
    /// Stock warmth that could be said to anyone.
    Hollow,
    /// Too generic to land, with no warmth in it to call hollow: a line about a compliment would
    /// answer something the reply never said.
    Generic,
    /// More questions than anyone can answer at once.
    Stacked,
}

impl Reaction {
    pub const ALL: [Reaction; 19] = [
        Reaction::Unsafe,
        Reaction::Parroted,
        Reaction::Meta,
        Reaction::OffTopic,
        Reaction::Incoherent,
        Reaction::CutOff,
        Reaction::Misread,
        Reaction::Alarmed,
        Reaction::SelfFocus,
        Reaction::Minimize,
        Reaction::Moralize,
        Reaction::AdviceRejected,
        Reaction::AdviceWelcome,
        Reaction::Platitude,
        Reaction::Repeated,
        Reaction::Formulaic,
        Reaction::Hollow,
        Reaction::Generic,
        Reaction::Stacked,
    ];

    /// The word in data/speaker.yaml and in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            Reaction::Unsafe => "unsafe",
            Reaction::Parroted => "parroted",
            Reaction::Meta => "meta",
            Reaction::OffTopic => "off_topic",
            Reaction::Incoherent => "incoherent",
            Reaction::CutOff => "cut_off",
            Reaction::Misread => "misread",
            Reaction::Alarmed => "alarmed",
            Reaction::SelfFocus => "self_focus",
            Reaction::Minimize => "minimize",
            Reaction::Moralize => "moralize",
            Reaction::AdviceRejected => "advice_rejected",
            Reaction::AdviceWelcome => "advice_welcome",
            Reaction::Platitude => "platitude",
            Reaction::Repeated => "repeated",
            Reaction::Formulaic => "formulaic",
            Reaction::Hollow => "hollow",
            Reaction::Generic => "generic",
            Reaction::Stacked => "stacked",
        }
    }

    /// A line of this reaction is a complaint: the user says it only after a reply that did not
    /// raise the emotion. The one pleased reaction (a suggestion taken up) follows no fall.
    pub fn is_complaint(self) -> bool {
        self != Reaction::AdviceWelcome
    }

    /// Whether a line of this reaction fits a reply that changed the emotion by `delta`: the sign
    /// of what the user says agrees with the sign of the change.
    pub fn agrees_with(self, delta: i32) -> bool {
        match self.is_complaint() {
            true => delta <= 0,
            false => delta >= 0,
        }
    }

    /// Replies that do not talk to this person about this: the user says so instead of answering
    /// whatever the reply asked.
    pub fn not_listening(self) -> bool {
        matches!(
            self,
            Reaction::Unsafe | Reaction::Meta | Reaction::OffTopic | Reaction::Incoherent
        )
    }
}

/// A kind of question (data/speaker.yaml `questions`; a scenario's `answers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    Tried,
    Who,
    Need,
    Feel,
    Happened,
}

impl QuestionKind {
    /// The order in which the kinds are tried on a question: the narrower kinds first.
    pub const ALL: [QuestionKind; 5] = [
        QuestionKind::Tried,
        QuestionKind::Who,
        QuestionKind::Need,
        QuestionKind::Feel,
        QuestionKind::Happened,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            QuestionKind::Tried => "tried",
            QuestionKind::Who => "who",
            QuestionKind::Need => "need",
            QuestionKind::Feel => "feel",
            QuestionKind::Happened => "happened",
        }
    }
}

/// Acknowledgements with a slot: `{feeling}` / `{Feeling}`, `{specific}` / `{Specific}`. A
/// persona's own come before data/speaker.yaml's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Landed {
    /// The reply named a feeling the user had not put in those words: the word may be news.
    #[serde(default)]
    pub feeling: Vec<String>,
    /// The reply named back a feeling the user had said: agreement, not discovery.
    #[serde(default)]
    pub feeling_said: Vec<String>,
    /// The reply picked up a specific of the user's story.
    #[serde(default)]
    pub specific: Vec<String>,
}

impl Landed {
    /// Each list with its field name and slot.
    pub fn lists(&self) -> [(&'static str, &'static str, &[String]); 3] {
        [
            ("feeling", "feeling", &self.feeling),
            ("feeling_said", "feeling", &self.feeling_said),
            ("specific", "specific", &self.specific),
        ]
    }

    /// Every line holds its slot (`{feeling}` or `{specific}`, either case); errors name `path`
    /// and the field under `at`.
    pub fn check_slots(&self, path: &Path, at: &str) -> Result<()> {
        for (field, slot, lines) in self.lists() {
            if let Some(l) = lines.iter().find(|l| fill(l, slot, "") == **l) {
                return Err(Error::input(
                    path,
                    format!("{at}.{field}"),
                    format!("`{l}` has no {{{slot}}} slot: every line needs one"),
                ));
            }
        }
        Ok(())
    }
}

/// How a reply's words affirm or deny what they name: a negation among the `window` words before a
/// phrase denies it, unless it is part of an `affirming` phrase ("no wonder"). All normalized.
#[derive(Clone, Copy, Debug)]
pub struct Negation<'a> {
    pub negations: &'a [String],
    pub affirming: &'a [String],
    pub window: usize,
}

/// The speaker's rules as read from `data/speaker.yaml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeakerRules {
    /// Phrases marking each kind of question, matched whole-word in [`QuestionKind::ALL`] order.
    pub questions: BTreeMap<QuestionKind, Vec<String>>,
    /// Generic lines per reaction.
    pub reactions: BTreeMap<Reaction, Vec<String>>,
    /// The user's last words after an unsafe reply, by the safety screen's category
    /// (`self_harm`, `risk_ignorance`, ...); a category without lines falls back on
    /// `reactions.unsafe`.
    #[serde(default)]
    pub unsafe_by_kind: BTreeMap<String, Vec<String>>,
    pub landed: Landed,
    /// Words that, just before a feeling or a specific in the reply, deny it ("nothing foolish",
    /// "not your fault"): the user acknowledges only what the reply affirmed.
    pub negations: Vec<String>,
    /// Words before a feeling or a specific that a negation reaches.
    pub negation_window: usize,
    /// Phrases holding a negation word that affirm what follows ("no wonder").
    pub affirming: Vec<String>,
    /// A guarded avoidant user's answer to a question it will not take up yet.
    pub decline: Vec<String>,
    /// A kind of question whose answers are used up.
    pub said_all: Vec<String>,
    /// The same, said in the terms of the question asked ("Nobody else I can think of." to "Who
    /// else knows?"); `said_all` is the fallback for a kind without lines here.
    #[serde(default)]
    pub said_all_by_kind: BTreeMap<QuestionKind, Vec<String>>,
    /// The last resort when everything is used up.
    pub fillers: Vec<String>,
    /// Words too common to tie a line to a reply (see `reactions` of a scenario).
    pub common_words: Vec<String>,
    /// Chance that a voice opener starts a message.
    pub opener_rate: f64,
    /// Words the message's first sentence needs for an opener to go before it: a filler before a
    /// fragment ("I suppose, guilty, mostly"; "I guess. Behind.") reads as two pieces glued.
    pub opener_min_words: usize,
    /// Chance that a trusting user asks one of the scenario's `asks` back.
    pub ask_back_rate: f64,
    /// Words that make a short sentence an answer ("Maybe.", "Could be.", "Kind of."): such a
    /// sentence, as an opener or at the head of a line, is said only after a reply that asked yes
    /// or no and nothing else.
    pub answer_words: Vec<String>,
    /// The most words such an answer sentence has ("Yeah, that tracks.").
    pub answer_max_words: usize,
    /// The words a yes/no question starts with ("Do you miss them?"), after any of
    /// `question_leads` ("And is there ...?").
    pub yes_no_starts: Vec<String>,
    /// Words a question may start with before its first real word ("and", "so", "or").
    pub question_leads: Vec<String>,
    /// What makes a line a verdict on the reply ("That helps.", "You don't get it.").
    pub verdict: Verdict,
}

/// What makes a line a verdict on the reply rather than a word on how the user is
/// ([`SpeakerRules::judges_reply`]).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// Words a first sentence may open with before its verdict ("Oh, that's kind.").
    pub leads: Vec<String>,
    /// What a verdict opens with, past the leads ("that", "thank", "it helps").
    pub starts: Vec<String>,
    /// Words that speak to the listener ("you", "your"), anywhere in the line.
    pub words: Vec<String>,
}

impl SpeakerRules {
    /// How the user reads a negation (`negations`, `affirming`): in what the speaker acknowledges
    /// and in the cues the appraiser reads.
    pub fn negation(&self) -> Negation<'_> {
        Negation {
            negations: &self.negations,
            affirming: &self.affirming,
            window: self.negation_window,
        }
    }

    /// Reads and checks `path`; every error names the file and the field.
    pub fn load(path: &Path) -> Result<Self> {
        let rules: SpeakerRules = crate::profile::yaml::read_yaml(path).map_err(|e| {
            if path.exists() {
                e
            } else {
                Error::input(
                    path,
                    "file",
                    "missing: the speaker's rules; copy data/speaker.yaml from the repository",
                )
            }
        })?;
        rules.validate(path)?;
        Ok(rules)
    }

    fn validate(&self, path: &Path) -> Result<()> {
        for k in QuestionKind::ALL {
            if self.questions.get(&k).is_none_or(Vec::is_empty) {
                return Err(Error::input(
                    path,
                    format!("questions.{}", k.as_str()),
                    "needs at least one phrase",
                ));
            }
        }
        for r in Reaction::ALL {
            if self.reactions.get(&r).is_none_or(Vec::is_empty) {
                return Err(Error::input(
                    path,
                    format!("reactions.{}", r.as_str()),
                    "needs at least one line",
                ));
            }
        }
        for (field, lines) in [
            ("landed.feeling", &self.landed.feeling),
            ("landed.feeling_said", &self.landed.feeling_said),
            ("landed.specific", &self.landed.specific),
            ("negations", &self.negations),
            ("decline", &self.decline),
            ("said_all", &self.said_all),
            ("fillers", &self.fillers),
            ("answer_words", &self.answer_words),
            ("yes_no_starts", &self.yes_no_starts),
            ("verdict.starts", &self.verdict.starts),
        ] {
            if lines.is_empty() {
                return Err(Error::input(path, field, "needs at least one line"));
            }
        }
        self.landed.check_slots(path, "landed")?;
        for (field, rate) in [
            ("opener_rate", self.opener_rate),
            ("ask_back_rate", self.ask_back_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(Error::input(path, field, "must be a probability in 0..=1"));
            }
        }
        Ok(())
    }

    /// The generic lines for a reaction.
    pub fn lines(&self, r: Reaction) -> &[String] {
        self.reactions.get(&r).map_or(&[], Vec::as_slice)
    }

    /// The lines for a kind of question whose answers are used up, in its terms first.
    pub fn said_all_for(&self, kind: QuestionKind) -> [&[String]; 2] {
        let own = self
            .said_all_by_kind
            .get(&kind)
            .map_or(&[][..], Vec::as_slice);
        [own, &self.said_all]
    }

    /// True when `text` holds one of `answer_words` (whole words).
    pub fn answers_yes_no(&self, text: &str) -> bool {
        let padded = normalize(text);
        self.answer_words
            .iter()
            .any(|w| padded.contains(normalize(w).as_str()))
    }

    /// The rest of `line` after a leading answer sentence: a first sentence, ended by its mark,
    /// of at most `answer_max_words` words holding one of `answer_words` ("Maybe. I keep changing
    /// my mind." -> "I keep changing my mind."; "Sort of." -> ""). `None` when the line opens
    /// otherwise, a hedge run into its sentence included ("I guess, the nights are worst.").
    pub fn after_answer<'a>(&self, line: &'a str) -> Option<&'a str> {
        let first = sentences(line).next()?;
        let ended = first.trim_end_matches(CLOSERS).ends_with(END_MARKS);
        let short = normalize(first).split_whitespace().count() <= self.answer_max_words;
        if !(ended && short && self.answers_yes_no(first)) {
            return None;
        }
        let at = first.as_ptr() as usize - line.as_ptr() as usize + first.len();
        Some(line[at..].trim_start())
    }

    /// True when `line` passes a verdict on the reply rather than saying how the user is: it
    /// speaks to the listener (`verdict.words`: "You don't get it.", "Nobody asked. Thank you.")
    /// or its first sentence opens, past `verdict.leads`, with one of `verdict.starts` ("That
    /// helps.", "Oh, that's kind,", "Good point."). "That" later in a line points back at the
    /// user's own words ("It's the waiting. That's the worst part.") and is not one.
    pub fn judges_reply(&self, line: &str) -> bool {
        let v = &self.verdict;
        let padded = normalize(line);
        if v.words
            .iter()
            .any(|w| padded.contains(normalize(w).as_str()))
        {
            return true;
        }
        let Some(first) = sentences(line).next() else {
            return false;
        };
        let first = normalize(first);
        let past_leads: Vec<&str> = first
            .split_whitespace()
            .skip_while(|w| v.leads.iter().any(|l| l == w))
            .collect();
        let opening = format!(" {} ", past_leads.join(" "));
        v.starts
            .iter()
            .any(|s| opening.starts_with(normalize(s).as_str()))
    }

    /// True when `question` asks yes or no: its first word past `question_leads` is one of
    /// `yes_no_starts` ("Do you miss them?", "And is there anyone?"; not "What matters most?").
    pub fn is_yes_no(&self, question: &str) -> bool {
        let padded = normalize(question);
        let first = padded
            .split_whitespace()
            .find(|w| !self.question_leads.iter().any(|l| l == w));
        first.is_some_and(|w| self.yes_no_starts.iter().any(|s| s == w))
    }
}

/// Lowercases, folds curly quotes, turns everything but letters, digits and apostrophes into
/// spaces, collapses runs of spaces, and pads with one space on each side, so that
/// `padded.contains(" phrase ")` is a whole-word match.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    let mut last_space = true;
    for c in text.chars() {
        let c = match c {
            '\u{2018}' | '\u{2019}' | '`' => '\'',
            c => c,
        };
        if c.is_alphanumeric() || c == '\'' {
            for l in c.to_lowercase() {
                out.push(l);
            }
            last_space = false;
        } else if !last_space {
            out.push(' ');
            last_space = true;
        }
    }
    if !last_space {
        out.push(' ');
    }
    out
}

/// The sentences of a line, split after '.', '!' and '?' and trimmed: the unit the speaker never
/// says twice, and that scenario validation checks for duplicates.
pub fn sentences(line: &str) -> impl Iterator<Item = &str> {
    split_after(line, &['.', '!', '?'])
}

/// The marks that end a sentence.
pub const END_MARKS: [char; 4] = ['.', '!', '?', '\u{2026}'];

/// Quotes and brackets that close a sentence right after its end mark.
const CLOSERS: [char; 6] = ['"', '\'', '\u{201d}', '\u{2019}', ')', ']'];

/// Splits `text` after each run of end marks (`marks`: "Wait..." and "Really?!" end once), each
/// part trimmed, empty parts dropped. Closing quotes and brackets right after a mark that is not
/// a line break end the sentence with it: in `and then "not sure anymore." And you had to` the
/// quote closes the first sentence and does not open a quotation at the start of the second; a
/// quote that opens a line opens it.
pub fn split_after<'a>(text: &'a str, marks: &[char]) -> impl Iterator<Item = &'a str> {
    let mut parts = Vec::new();
    // `ended`: a run of marks is under way; `closes`: its last mark was not whitespace.
    let (mut start, mut ended, mut closes) = (0, false, false);
    for (i, c) in text.char_indices() {
        if marks.contains(&c) {
            (ended, closes) = (true, !c.is_whitespace());
            continue;
        }
        if ended && closes && CLOSERS.contains(&c) {
            continue;
        }
        if ended {
            parts.push(&text[start..i]);
            start = i;
            ended = false;
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().map(str::trim).filter(|s| !s.is_empty())
}

/// Fills `{slot}` with `value`, and `{Slot}` with it capitalized.
pub fn fill(template: &str, slot: &str, value: &str) -> String {
    let mut cap = String::new();
    let mut chars = value.chars();
    if let Some(c) = chars.next() {
        cap.extend(c.to_uppercase());
        cap.push_str(chars.as_str());
    }
    let mut upper_slot = String::new();
    let mut s = slot.chars();
    if let Some(c) = s.next() {
        upper_slot.extend(c.to_uppercase());
        upper_slot.push_str(s.as_str());
    }
    template
        .replace(&format!("{{{slot}}}"), value)
        .replace(&format!("{{{upper_slot}}}"), &cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> SpeakerRules {
        SpeakerRules::load(
            &Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("data/speaker.yaml"),
        )
        .unwrap()
    }

    #[test]
    fn sentences_end_after_their_marks_and_closing_quotes() {
        let got: Vec<&str> =
            sentences("Then \"not sure anymore.\" And you called (all of them.) Wait... Really?!")
                .collect();
        assert_eq!(
            got,
            [
                "Then \"not sure anymore.\"",
                "And you called (all of them.)",
                "Wait...",
                "Really?!"
            ]
        );
        // An opening quote after a space opens the next sentence.
        let got: Vec<&str> = sentences("She said no. \"Fine,\" I said.").collect();
        assert_eq!(got, ["She said no.", "\"Fine,\" I said."]);
        assert_eq!(
            sentences("no end mark").collect::<Vec<_>>(),
            ["no end mark"]
        );
    }

    #[test]
    fn the_repository_rules_load() {
        let r = rules();
        assert!(r.lines(Reaction::Parroted).len() >= 2);
    }

    #[test]
    fn a_verdict_on_the_reply_is_told_from_a_word_on_the_user() {
        let r = rules();
        for verdict in [
            "That helps.",
            "Honestly, that helps more than I thought.",
            "Oh, that's kind,",
            "Good point.",
            "Thank you,",
            "You don't get it.",
            "Nobody's asked how I'm doing. Thank you.",
            "It helps to talk about it.",
            "Fair enough.",
        ] {
            assert!(r.judges_reply(verdict), "{verdict}");
        }
        for about_the_user in [
            "I feel a bit lighter.",
            "It's the waiting. That's the worst part.",
            "Okay, so,",
            "Right, right.",
            "I guess.",
            "Mostly tired, I think.",
            "Thatcher was our head.",
        ] {
            assert!(!r.judges_reply(about_the_user), "{about_the_user}");
        }
    }

    #[test]
    fn slots_fill_plain_and_capitalized() {
        assert_eq!(
            fill("{Feeling}. I am {feeling}.", "feeling", "guilty"),
            "Guilty. I am guilty."
        );
        assert_eq!(
            fill("Yes, {specific}.", "specific", "her shoes"),
            "Yes, her shoes."
        );
    }

    #[test]
    fn a_missing_list_is_named() {
        let dir = std::env::temp_dir().join(format!("speaker-rules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("speaker.yaml");
        let text = std::fs::read_to_string(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("data/speaker.yaml"),
        )
        .unwrap()
        .replace("  stacked: [", "  unused: [");
        std::fs::write(&path, text).unwrap();
        let err = SpeakerRules::load(&path).unwrap_err().to_string();
        assert!(err.contains("speaker.yaml"), "{err}");
        assert!(err.contains("unused") || err.contains("stacked"), "{err}");
    }
}
