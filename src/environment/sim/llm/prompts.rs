//! The LLM user's prompt templates (data/llm-simulator.yaml), loaded and checked once, rendered
//! per turn from the profile (scenario and persona YAML), the difficulty and the history.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::profile::{Difficulty, Profile};
use crate::sim::Bucket;

/// A system and a user message.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallTemplate {
    pub system: String,
    pub user: String,
}

/// Guardedness by difficulty.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guardedness {
    pub easy: String,
    pub moderate: String,
    pub hard: String,
}

/// What each emotion bucket means for the reply.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct BucketText {
    pub S: String,
    pub A: String,
    pub B: String,
    pub C: String,
    pub F: String,
}

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prompts {
    /// Logged in every episode record (`simulator.prompt_version`).
    pub version: String,
    pub guardedness: Guardedness,
    pub buckets: BucketText,
    pub analysis: CallTemplate,
    pub reply: CallTemplate,
    pub format_reminder: String,
}

/// The names a template may use.
pub const PLACEHOLDERS: [&str; 15] = [
    "persona_name",
    "persona_age",
    "persona_occupation",
    "persona_style",
    "background",
    "need",
    "hidden_facts",
    "guardedness",
    "history",
    "emotion",
    "reply",
    "reasons",
    "bucket",
    "reply_words",
    "error",
];

/// The `{name}`s of a template, in order.
fn names(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        match after.find('}') {
            Some(j) => {
                out.push(&after[..j]);
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
    out
}

impl Prompts {
    /// Loads and checks `path`: every `{name}` must be one of [`PLACEHOLDERS`].
    pub fn load(path: &Path) -> Result<Self> {
        let p: Prompts = crate::profile::yaml::read_yaml(path)?;
        let fields = [
            ("analysis.system", &p.analysis.system),
            ("analysis.user", &p.analysis.user),
            ("reply.system", &p.reply.system),
            ("reply.user", &p.reply.user),
            ("format_reminder", &p.format_reminder),
        ];
        for (field, text) in fields {
            if let Some(bad) = names(text).into_iter().find(|n| !PLACEHOLDERS.contains(n)) {
                return Err(Error::input(
                    path,
                    field,
                    format!(
                        "unknown placeholder `{{{bad}}}`; use one of {}",
                        PLACEHOLDERS.join(", ")
                    ),
                ));
            }
        }
        if p.version.trim().is_empty() {
            return Err(Error::input(
                path,
                "version",
                "empty; give the prompts a version",
            ));
        }
        Ok(p)
    }

    /// The guardedness sentence of a difficulty (`auto` reads as moderate: the prompts have no
    /// level between the presets).
    pub fn guardedness(&self, d: Difficulty) -> &str {
        match d {
            Difficulty::Easy => &self.guardedness.easy,
            Difficulty::Moderate | Difficulty::Auto => &self.guardedness.moderate,
            Difficulty::Hard => &self.guardedness.hard,
        }
    }

    /// The sentence of an emotion bucket.
    pub fn bucket(&self, b: Bucket) -> &str {
        match b {
            Bucket::S => &self.buckets.S,
            Bucket::A => &self.buckets.A,
            Bucket::B => &self.buckets.B,
            Bucket::C => &self.buckets.C,
            Bucket::F => &self.buckets.F,
        }
    }
}

/// The values of the profile's placeholders.
pub fn profile_values(prompts: &Prompts, profile: &Profile) -> BTreeMap<&'static str, String> {
    let (s, p) = (&profile.scenario, &profile.persona);
    let facts: Vec<&str> = s.hidden_facts.iter().map(|f| f.text.as_str()).collect();
    BTreeMap::from([
        ("persona_name", p.name.clone()),
        ("persona_age", p.age.to_string()),
        ("persona_occupation", p.occupation.clone()),
        ("persona_style", p.style.clone()),
        ("background", s.background.trim().to_string()),
        ("need", s.need.as_str().replace('_', " ")),
        ("hidden_facts", facts.join(" ")),
        (
            "guardedness",
            prompts.guardedness(profile.difficulty).to_string(),
        ),
        ("reply_words", p.reply_words[1].to_string()),
    ])
}

/// The dialogue as the user remembers it: `You: ...` and `Supporter: ...` lines.
pub fn history(user_messages: &[&str], replies: &[&str]) -> String {
    let mut lines = Vec::new();
    for (i, u) in user_messages.iter().enumerate() {
        lines.push(format!("You: {u}"));
        if let Some(r) = replies.get(i) {
            lines.push(format!("Supporter: {r}"));
        }
    }
    lines.join("\n")
}

/// Replaces every `{name}` with its value (names without a value stay as they are).
pub fn render(template: &str, values: &BTreeMap<&'static str, String>) -> String {
    let mut out = template.to_string();
    for (k, v) in values {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_and_history() {
        let v = BTreeMap::from([("emotion", "40".to_string()), ("reply", "Hi.".to_string())]);
        assert_eq!(
            render("At {emotion}: \"{reply}\" {other}", &v),
            "At 40: \"Hi.\" {other}"
        );
        assert_eq!(history(&["a", "b"], &["x"]), "You: a\nSupporter: x\nYou: b");
        assert_eq!(names("{a} and {b}{"), ["a", "b"]);
    }

    #[test]
    fn the_shipped_templates_load_and_an_unknown_placeholder_is_refused() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let p = Prompts::load(&root.join("data/llm-simulator.yaml")).unwrap();
        assert!(!p.version.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("p.yaml");
        let text = std::fs::read_to_string(root.join("data/llm-simulator.yaml"))
            .unwrap()
            .replace("{background}", "{backstory}");
        std::fs::write(&bad, text).unwrap();
        let e = Prompts::load(&bad).unwrap_err().to_string();
        assert!(
            e.contains("analysis.system") && e.contains("{backstory}"),
            "{e}"
        );
    }
}
