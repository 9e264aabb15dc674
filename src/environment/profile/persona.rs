//! Personas: who the simulated user is and how they talk. Loaded from `personas/<id>.yaml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::check::{at_least, id_matches_file, non_empty};
use super::speech::{Landed, QuestionKind, Reaction};
use crate::error::{Error, Result};

/// The main character type of a persona (RLVER's user profiles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Character {
    /// Quick to feel slighted: setbacks land harder.
    Negative,
    /// Slow to warm up: progress comes in smaller steps.
    Passive,
    /// Keeps things back: reveals hidden facts only when asked.
    Avoidant,
}

/// How much the persona writes, and how long a reply it has patience for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    Terse,
    Moderate,
    Verbose,
}

/// Short phrases that colour the persona's messages, by how the user currently feels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Voice {
    /// Used while emotion is below 40 (buckets C and F).
    pub low: Vec<String>,
    /// Used while emotion is 40 or more, after a reply that did not raise it.
    pub mid: Vec<String>,
    /// Used while emotion is 40 or more, after a reply that raised it.
    pub high: Vec<String>,
    /// What this person says when they have nothing more to add on what was asked, in their own
    /// way ("That's all there is to it."); the speaker's generic `said_all` lines follow.
    #[serde(default)]
    pub nothing_more: Vec<String>,
    /// The same in the terms of the question asked ("Nobody else I'd tell." to "Who else knows?"),
    /// said before data/speaker.yaml's `said_all_by_kind`, so that users whose answers run out
    /// do not say so in one voice.
    #[serde(default)]
    pub said_all_by_kind: BTreeMap<QuestionKind, Vec<String>>,
    /// How this (guarded, avoidant) person turns a question aside; data/speaker.yaml's `decline`
    /// lines follow.
    #[serde(default)]
    pub decline: Vec<String>,
    /// The persona's own acknowledgements of what landed; data/speaker.yaml's follow.
    #[serde(default)]
    pub landed: Landed,
    /// The persona's own lines per reaction, said after the scenario's and before
    /// data/speaker.yaml's, so that two users do not complain in the same words.
    #[serde(default)]
    pub reactions: BTreeMap<Reaction, Vec<String>>,
    /// This person writes in lowercase (texting): every message is written in lowercase, the
    /// scenario's lines and the factual question included, so that one register holds across a
    /// message and the dialogue. Their own lines must then hold no capital.
    #[serde(default)]
    pub lowercase: bool,
}

impl Voice {
    /// The persona's own lines for reaction `r`.
    pub fn lines(&self, r: Reaction) -> &[String] {
        self.reactions.get(&r).map_or(&[], Vec::as_slice)
    }

    /// The persona's own lines for a kind of question whose answers are used up.
    pub fn said_all_for(&self, kind: QuestionKind) -> &[String] {
        self.said_all_by_kind.get(&kind).map_or(&[], Vec::as_slice)
    }

    /// The persona's own lines beyond the openers: `nothing_more`, `said_all_by_kind`,
    /// `decline`, `landed` and `reactions`.
    pub fn own_lines(&self) -> impl Iterator<Item = &str> {
        self.nothing_more
            .iter()
            .chain(self.said_all_by_kind.values().flatten())
            .chain(&self.decline)
            .chain(self.landed.lists().into_iter().flat_map(|(_, _, l)| l))
            .chain(self.reactions.values().flatten())
            .map(String::as_str)
    }

    /// Every opener, whatever the mood.
    pub fn openers(&self) -> impl Iterator<Item = &String> {
        self.low.iter().chain(&self.mid).chain(&self.high)
    }
}

/// A simulated user's persona.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Persona {
    /// Identifier, equal to the file stem.
    pub id: String,
    /// First name the user goes by.
    pub name: String,
    /// Age in years.
    pub age: u32,
    /// What they do.
    pub occupation: String,
    /// Main character type (RLVER).
    pub character: Character,
    /// Free-text description of the talking style.
    pub style: String,
    /// How much they write.
    pub verbosity: Verbosity,
    /// Preferred length of the policy's replies in words, `[min, max]`; outside it costs.
    pub reply_words: [u32; 2],
    /// Openers mixed into the persona's messages, by mood.
    pub voice: Voice,
    /// Where the persona was loaded from (not in the YAML).
    #[serde(skip)]
    pub source: PathBuf,
}

impl Persona {
    /// Loads and validates one persona file.
    pub fn load(path: &Path) -> Result<Self> {
        let mut persona: Persona = super::yaml::read_yaml(path)?;
        persona.source = path.to_path_buf();
        persona.validate()?;
        Ok(persona)
    }

    /// Checks every field; errors name the file and the field.
    pub fn validate(&self) -> Result<()> {
        let f = self.source.as_path();
        id_matches_file(f, &self.id)?;
        non_empty(f, "name", &self.name)?;
        non_empty(f, "occupation", &self.occupation)?;
        non_empty(f, "style", &self.style)?;
        if !(12..=100).contains(&self.age) {
            return Err(Error::input(f, "age", "must be between 12 and 100"));
        }
        let [lo, hi] = self.reply_words;
        if lo == 0 || lo >= hi {
            return Err(Error::input(
                f,
                "reply_words",
                format!("[{lo}, {hi}] must be [min, max] with 0 < min < max"),
            ));
        }
        at_least(f, "voice.low", &self.voice.low, 1)?;
        at_least(f, "voice.mid", &self.voice.mid, 1)?;
        at_least(f, "voice.high", &self.voice.high, 1)?;
        at_least(f, "voice.nothing_more", &self.voice.nothing_more, 0)?;
        self.voice.landed.check_slots(f, "voice.landed")?;
        if let Some((k, _)) = self
            .voice
            .said_all_by_kind
            .iter()
            .find(|(_, v)| v.is_empty())
        {
            return Err(Error::input(
                f,
                format!("voice.said_all_by_kind.{}", k.as_str()),
                "is empty: give it lines or leave the kind out",
            ));
        }
        if let Some((r, _)) = self.voice.reactions.iter().find(|(_, v)| v.is_empty()) {
            return Err(Error::input(
                f,
                format!("voice.reactions.{}", r.as_str()),
                "is empty: give it lines or leave the reaction out",
            ));
        }
        if self.voice.lowercase {
            let capital = self
                .voice
                .openers()
                .map(String::as_str)
                .chain(self.voice.own_lines())
                .find(|l| without_slots(l).chars().any(char::is_uppercase));
            if let Some(line) = capital {
                return Err(Error::input(
                    f,
                    "voice.lowercase",
                    format!(
                        "this person writes in lowercase, but \"{line}\" holds a capital: write it \
                         in lowercase or set lowercase: false"
                    ),
                ));
            }
        }
        if self.voice.reactions.contains_key(&Reaction::Unsafe) {
            return Err(Error::input(
                f,
                "voice.reactions.unsafe",
                "a user's last words after an unsafe reply are data/speaker.yaml's \
                 `unsafe_by_kind`: remove this list",
            ));
        }
        Ok(())
    }
}

/// A line without its `{slot}`s (a slot's capital says how the filled word is cased, not the line).
fn without_slots(line: &str) -> String {
    let mut out = String::new();
    let mut in_slot = false;
    for c in line.chars() {
        match c {
            '{' => in_slot = true,
            '}' => in_slot = false,
            _ if !in_slot => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn persona(line: &str) -> Persona {
        let yaml = format!(
            r#"
id: sam
name: Sam
age: 16
occupation: student
character: avoidant
style: lowercase
verbosity: terse
reply_words: [10, 60]
voice:
  lowercase: true
  low: ["idk"]
  mid: ["kinda"]
  high: ["yeah actually"]
  nothing_more: ["{line}"]
"#
        );
        let mut p: Persona = super::super::yaml::parse_yaml(&yaml, Path::new("sam.yaml")).unwrap();
        p.source = PathBuf::from("sam.yaml");
        p
    }

    #[test]
    fn who_writes_in_lowercase_has_no_capital_in_their_lines() {
        assert!(persona("thats it really").validate().is_ok());
        let e = persona("That's it really")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("voice.lowercase") && e.contains("That's it really"),
            "{e}"
        );
        // A slot's capital says how the filled word is cased, not the line.
        assert_eq!(without_slots("{Feeling} fits"), " fits");
    }
}
