//! Loads the context and wrong-belief wording of the factual evaluation from YAML
//! (`data/factual/contexts.yaml`): wording is data, so it can be reviewed and changed without
//! touching code. Two stages, as everywhere in empathy-gym: serde structs that mirror the file
//! (`deny_unknown_fields`), then `validate()` into [`Contexts`], with errors naming the field.

use std::path::Path;

/// The interpersonal context a question is asked in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Context {
    /// The bare question.
    Plain,
    /// The user says they are happy.
    EmotionHappy,
    /// The user says they are sad.
    EmotionSad,
    /// The user says they are angry.
    EmotionAnger,
    /// The user treats the assistant as a close friend.
    RelationClose,
    /// The user defers to the assistant ("you know better than me").
    RelationUp,
    /// The user speaks down to the assistant ("I'm the expert here").
    RelationDown,
    /// Much depends on the answer.
    StakesHigh,
    /// Nothing depends on the answer.
    StakesLow,
}

impl Context {
    /// All nine contexts, in report order.
    pub const ALL: [Context; 9] = [
        Context::Plain,
        Context::EmotionHappy,
        Context::EmotionSad,
        Context::EmotionAnger,
        Context::RelationClose,
        Context::RelationUp,
        Context::RelationDown,
        Context::StakesHigh,
        Context::StakesLow,
    ];

    /// Stable snake_case name, as in CSV and JSONL (`emotion_sad`).
    pub fn name(self) -> &'static str {
        match self {
            Context::Plain => "plain",
            Context::EmotionHappy => "emotion_happy",
            Context::EmotionSad => "emotion_sad",
            Context::EmotionAnger => "emotion_anger",
            Context::RelationClose => "relation_close",
            Context::RelationUp => "relation_up",
            Context::RelationDown => "relation_down",
            Context::StakesHigh => "stakes_high",
            Context::StakesLow => "stakes_low",
        }
    }

    /// Short label for tables and charts (`sad`, `high stakes`).
    pub fn label(self) -> &'static str {
        match self {
            Context::Plain => "plain",
            Context::EmotionHappy => "happy",
            Context::EmotionSad => "sad",
            Context::EmotionAnger => "angry",
            Context::RelationClose => "close",
            Context::RelationUp => "defers",
            Context::RelationDown => "talks down",
            Context::StakesHigh => "high stakes",
            Context::StakesLow => "low stakes",
        }
    }

    /// Position in [`Context::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

use crate::error::{Error, Result};

/// Where the shipped wording lives, relative to the repository root.
pub const DEFAULT_CONTEXTS_PATH: &str = "data/factual/contexts.yaml";

/// Validated wording: phrase variants per context, wrong-belief templates, an optional instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contexts {
    /// Phrase variants indexed by [`Context::index`]; the plain context has none.
    pub by_context: [Vec<String>; 9],
    /// Wrong-belief templates, each with exactly one `{wrong}`.
    pub wrong_belief: Vec<String>,
    /// Sentence appended to every prompt (e.g. "Answer in one short sentence."), if any.
    pub instruction: Option<String>,
}

impl Contexts {
    /// Phrase variants for `context` (empty for [`Context::Plain`]).
    pub fn phrases(&self, context: Context) -> &[String] {
        &self.by_context[context.index()]
    }

    /// Reads and validates a contexts YAML file.
    pub fn load(path: &Path) -> Result<Contexts> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Contexts::parse(&text, path)
    }

    /// Parses and validates contexts YAML `text`; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Contexts> {
        let file: ContextsFile = serde_yaml::from_str(text).map_err(|e| {
            let location = e
                .location()
                .map(|l| format!("line {}", l.line()))
                .unwrap_or_else(|| "top level".to_string());
            Error::input(
                path,
                location,
                format!("{e}; expected keys instruction, emotion, relation, stakes, wrong_belief"),
            )
        })?;
        file.validate(path)
    }
}

/// The file as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextsFile {
    #[serde(default)]
    instruction: Option<String>,
    emotion: EmotionPhrases,
    relation: RelationPhrases,
    stakes: StakesPhrases,
    wrong_belief: Vec<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EmotionPhrases {
    happy: Vec<String>,
    sad: Vec<String>,
    anger: Vec<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RelationPhrases {
    close: Vec<String>,
    up: Vec<String>,
    down: Vec<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StakesPhrases {
    high: Vec<String>,
    low: Vec<String>,
}

impl ContextsFile {
    fn validate(self, path: &Path) -> Result<Contexts> {
        let lists: [(&str, Vec<String>); 8] = [
            ("emotion.happy", self.emotion.happy),
            ("emotion.sad", self.emotion.sad),
            ("emotion.anger", self.emotion.anger),
            ("relation.close", self.relation.close),
            ("relation.up", self.relation.up),
            ("relation.down", self.relation.down),
            ("stakes.high", self.stakes.high),
            ("stakes.low", self.stakes.low),
        ];
        let mut by_context: [Vec<String>; 9] = Default::default();
        for (i, (field, list)) in lists.into_iter().enumerate() {
            by_context[i + 1] = check_phrases(path, field, list, false)?;
        }
        let wrong_belief = check_phrases(path, "wrong_belief", self.wrong_belief, true)?;
        let instruction = match self.instruction {
            Some(s) if s.trim().is_empty() => {
                return Err(Error::input(
                    path,
                    "instruction",
                    "is empty; write a sentence or remove the key",
                ))
            }
            Some(s) => Some(check_braces(path, "instruction", s, false)?),
            None => None,
        };
        Ok(Contexts {
            by_context,
            wrong_belief,
            instruction,
        })
    }
}

/// A non-empty list of non-empty, trimmed phrases; `with_wrong` requires one `{wrong}` in each.
fn check_phrases(
    path: &Path,
    field: &str,
    list: Vec<String>,
    with_wrong: bool,
) -> Result<Vec<String>> {
    if list.is_empty() {
        return Err(Error::input(
            path,
            field,
            "needs at least one phrase; add a sentence to the list",
        ));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, s)| {
            let at = format!("{field}[{i}]");
            if s.trim().is_empty() {
                return Err(Error::input(
                    path,
                    at,
                    "is empty; write a sentence or remove it",
                ));
            }
            check_braces(path, &at, s.trim().to_string(), with_wrong)
        })
        .collect()
}

/// Allows `{wrong}` exactly once where `with_wrong`, and no other braces anywhere.
fn check_braces(path: &Path, at: &str, s: String, with_wrong: bool) -> Result<String> {
    let count = s.matches("{wrong}").count();
    let rest = s.replace("{wrong}", "");
    if rest.contains(['{', '}']) {
        return Err(Error::input(
            path,
            at,
            format!("{s:?} has a placeholder other than {{wrong}}; remove the braces"),
        ));
    }
    match (with_wrong, count) {
        (true, 1) | (false, 0) => Ok(s),
        (true, _) => Err(Error::input(
            path,
            at,
            format!("{s:?} must contain {{wrong}} exactly once (where the wrong answer goes)"),
        )),
        (false, _) => Err(Error::input(
            path,
            at,
            format!("{s:?} contains {{wrong}}, which is only allowed in wrong_belief"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "
instruction: Answer briefly.
emotion: {happy: [Yay!], sad: [I feel low.], anger: [I'm mad.]}
relation: {close: [Friend.], up: [You know best.], down: [I know best.]}
stakes: {high: [It matters.], low: [It doesn't matter.]}
wrong_belief: ['I think it is {wrong}.', 'Maybe {wrong}?']
";

    fn parse(text: &str) -> Result<Contexts> {
        Contexts::parse(text, Path::new("contexts.yaml"))
    }

    #[test]
    fn good_file_fills_every_context_but_plain() {
        let c = parse(GOOD).unwrap();
        assert!(c.phrases(Context::Plain).is_empty());
        assert_eq!(c.phrases(Context::EmotionSad), ["I feel low.".to_string()]);
        assert_eq!(
            c.phrases(Context::StakesLow),
            ["It doesn't matter.".to_string()]
        );
        assert_eq!(c.wrong_belief.len(), 2);
        assert_eq!(c.instruction.as_deref(), Some("Answer briefly."));
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse(&GOOD.replace("sad: [I feel low.]", "sad: []"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("contexts.yaml: emotion.sad: needs at least one phrase"),
            "{e}"
        );
        let e = parse(&GOOD.replace("'Maybe {wrong}?'", "'Maybe?'"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("wrong_belief[1]") && e.contains("exactly once"),
            "{e}"
        );
        let e = parse(&GOOD.replace("Friend.", "'{wrong} friend'"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("relation.close[0]"), "{e}");
        let e = parse(&GOOD.replace("low: [It doesn't matter.]", "low: ['  ']"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("stakes.low[0]: is empty"), "{e}");
    }

    #[test]
    fn missing_and_unknown_keys_are_rejected() {
        let e = parse(&GOOD.replace("anger: [I'm mad.]", "angry: [I'm mad.]"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown field `angry`") || e.contains("missing field `anger`"),
            "{e}"
        );
        let e = parse(&GOOD.replace("stakes:", "stake:"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("stake"), "{e}");
    }
}
