//! A simulated user for a conversation the project did not generate: the fields a catalog scenario
//! hand-writes (feelings, the hidden need, example replies that help and hurt) derived from what the
//! seeker wrote by the rules of `data/judge.yaml`, and kept as [`Derived`] so the output shows what
//! the judge assumed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::environment::profile::persona::Voice;
use crate::environment::profile::{
    Character, Difficulty, HiddenNeed, Knobs, Persona, Presets, Profile, ProfileId, Scenario,
    Utterances, Verbosity,
};
use crate::environment::sim::lexicon::Lexicon;
use crate::environment::sim::text::{normalize, words};
use crate::error::{Error, Result};

/// One need rule: the first whose phrase occurs in the seeker's text names the need.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeedRule {
    pub need: HiddenNeed,
    pub phrases: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonaRules {
    character: Character,
    reply_words: [u32; 2],
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    difficulty: Difficulty,
    persona: PersonaRules,
    needs: Vec<NeedRule>,
    default_need: HiddenNeed,
    feelings: Vec<String>,
    helps: BTreeMap<HiddenNeed, Vec<String>>,
    hurts: Vec<String>,
}

/// The loaded rules of `data/judge.yaml`, with the knobs of its difficulty and the lexicon's
/// feeling words.
#[derive(Clone, Debug)]
pub struct JudgeRules {
    rules: RulesFile,
    knobs: Knobs,
    /// Normalized feeling words: the rules' and the lexicon's.
    feelings: Vec<String>,
    stopwords: std::collections::HashSet<String>,
    source: PathBuf,
}

/// What the judge derived from a conversation's seeker side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// The guessed hidden need.
    pub need: HiddenNeed,
    /// Why: the phrase that matched, or `default`.
    pub need_because: String,
    /// Feeling words the seeker used.
    pub feelings: Vec<String>,
    /// The seeker's content words, first mention first (at most 12).
    pub specifics: Vec<String>,
}

impl JudgeRules {
    /// Loads `data/judge.yaml`, `data/difficulty.yaml` and `data/lexicon.yaml` under `root`.
    pub fn load(root: &Path) -> Result<Self> {
        let path = root.join("data/judge.yaml");
        let rules: RulesFile = crate::environment::profile::yaml::read_yaml(&path)?;
        let [lo, hi] = rules.persona.reply_words;
        if lo == 0 || lo >= hi {
            return Err(Error::input(
                &path,
                "persona.reply_words",
                format!("[{lo}, {hi}] must be [min, max] with 0 < min < max"),
            ));
        }
        for need in HiddenNeed::ALL {
            if rules.helps.get(&need).is_none_or(Vec::is_empty) {
                return Err(Error::input(
                    &path,
                    format!("helps.{}", need.as_str()),
                    "every need needs at least one example reply",
                ));
            }
        }
        let presets = Presets::load(&root.join("data/difficulty.yaml"))?;
        let knobs = presets.knobs(rules.difficulty).clone();
        let lexicon = Lexicon::load(&root.join("data/lexicon.yaml"))?;
        let mut feelings: Vec<String> = rules
            .feelings
            .iter()
            .map(|f| normalize(f))
            .chain(lexicon.feelings.iter().cloned())
            .collect();
        feelings.sort();
        feelings.dedup();
        Ok(JudgeRules {
            rules,
            knobs,
            feelings,
            stopwords: lexicon.stopwords.clone(),
            source: path,
        })
    }

    /// The knobs every judged user gets.
    pub fn knobs(&self) -> &Knobs {
        &self.knobs
    }

    /// Derives the scenario fields from the seeker's messages (all of them, as a human rater
    /// reads the whole conversation).
    pub fn derive(&self, seeker: &[&str]) -> Derived {
        let padded = normalize(&seeker.join(" "));
        let (need, need_because) = self
            .rules
            .needs
            .iter()
            .find_map(|r| {
                r.phrases
                    .iter()
                    .find(|p| padded.contains(normalize(p).as_str()))
                    .map(|p| (r.need, p.clone()))
            })
            .unwrap_or((self.rules.default_need, "default".into()));
        let feelings: Vec<String> = self
            .feelings
            .iter()
            .filter(|f| padded.contains(f.as_str()))
            .map(|f| f.trim().to_string())
            .collect();
        let mut specifics: Vec<String> = Vec::new();
        for w in words(&seeker.join(" ")) {
            let content = w.chars().count() >= 4 && !self.stopwords.contains(&w);
            if content && !specifics.contains(&w) && specifics.len() < 12 {
                specifics.push(w);
            }
        }
        Derived {
            need,
            need_because,
            feelings,
            specifics,
        }
    }

    /// The profile the appraiser judges with: `id` names it in the output.
    pub fn profile(&self, id: &str, seeker: &[&str], derived: &Derived) -> Profile {
        let r = &self.rules;
        let scenario = Scenario {
            id: id.to_string(),
            topic: "judged".into(),
            title: id.to_string(),
            need: derived.need,
            personas: vec!["judged".into()],
            start_emotion: None,
            background: seeker.join(" "),
            opening: seeker.first().copied().unwrap_or_default().to_string(),
            feelings: derived.feelings.clone(),
            specifics: derived.specifics.clone(),
            hidden_facts: Vec::new(),
            hints: Vec::new(),
            helps: r.helps[&derived.need].clone(),
            hurts: r.hurts.clone(),
            answers: Default::default(),
            asks: Vec::new(),
            reactions: Default::default(),
            utterances: Utterances {
                S: Vec::new(),
                A: Vec::new(),
                B: Vec::new(),
                C: Vec::new(),
                F: Vec::new(),
            },
            factual: Vec::new(),
            source: self.source.clone(),
        };
        let persona = Persona {
            id: "judged".into(),
            name: "seeker".into(),
            age: 30,
            occupation: "unknown".into(),
            character: r.persona.character,
            style: "as written".into(),
            verbosity: Verbosity::Moderate,
            reply_words: r.persona.reply_words,
            voice: Voice::default(),
            source: self.source.clone(),
        };
        Profile {
            id: ProfileId {
                scenario: id.to_string(),
                persona: "judged".into(),
            },
            scenario: Arc::new(scenario),
            persona: Arc::new(persona),
            difficulty: r.difficulty,
            knobs: self.knobs.clone(),
            // The conversation's own words stand for the user's: nothing is ever spoken.
            speaker: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> JudgeRules {
        JudgeRules::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn the_first_matching_need_rule_wins_and_says_why() {
        let r = rules();
        let d = r.derive(&["I feel so lonely. What should I do about my roommate?"]);
        assert_eq!(d.need, HiddenNeed::GetPracticalHelp);
        assert_eq!(d.need_because, "what should i do");
        assert!(
            d.feelings.contains(&"lonely".to_string()),
            "{:?}",
            d.feelings
        );
        let d = r.derive(&["My dog died last week."]);
        assert_eq!(
            (d.need, d.need_because.as_str()),
            (HiddenNeed::BeHeard, "default")
        );
        assert!(
            d.specifics.contains(&"died".to_string()),
            "{:?}",
            d.specifics
        );
    }

    #[test]
    fn the_profile_carries_the_derived_fields() {
        let r = rules();
        let seeker = ["Does anyone else feel numb after a breakup?"];
        let d = r.derive(&seeker);
        let p = r.profile("p1", &seeker, &d);
        assert_eq!(p.scenario.need, HiddenNeed::FeelConnected);
        assert_eq!(p.scenario.feelings, vec!["numb".to_string()]);
        assert_eq!(p.knobs.start_emotion, r.knobs().start_emotion);
        assert!(!p.scenario.helps.is_empty());
    }
}
