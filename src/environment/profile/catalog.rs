//! The catalog: every scenario, persona, the split and the difficulty presets under one root
//! folder (`scenarios/`, `personas/`, `data/splits.yaml`, `data/difficulty.yaml`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::difficulty::{Difficulty, KnobOverrides, Knobs, Presets};
use super::need::HiddenNeed;
use super::persona::Persona;
use super::scenario::Scenario;
use super::speech::SpeakerRules;
use super::split::{ProfileId, Split, Splits};
use super::yaml::yaml_files;
use crate::error::{Error, Result};

/// A resolved profile: who the user is, what they bring, and how hard they are to reach.
#[derive(Clone, Debug)]
pub struct Profile {
    pub id: ProfileId,
    pub scenario: Arc<Scenario>,
    pub persona: Arc<Persona>,
    pub difficulty: Difficulty,
    /// The preset's knobs with config and scenario overrides applied.
    pub knobs: Knobs,
    /// The speaker's rules (`data/speaker.yaml`), shared by every profile of the catalog.
    pub speaker: Arc<SpeakerRules>,
}

/// Everything under a catalog root, validated and cross-checked.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub root: PathBuf,
    pub scenarios: BTreeMap<String, Arc<Scenario>>,
    pub personas: BTreeMap<String, Arc<Persona>>,
    pub splits: Splits,
    pub presets: Presets,
    pub speaker: Arc<SpeakerRules>,
}

/// Coverage numbers that `empathy-gym validate` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Coverage {
    pub scenarios: usize,
    pub personas: usize,
    pub topics: BTreeSet<String>,
    pub needs: BTreeSet<HiddenNeed>,
    pub train_profiles: usize,
    pub test_profiles: usize,
    /// Scenarios used by test profiles and by no train profile.
    pub test_only_scenarios: usize,
    pub factual_scenarios: usize,
}

impl Catalog {
    /// Loads and cross-checks the catalog under `root`.
    pub fn load(root: &Path) -> Result<Self> {
        check_root(root)?;
        let personas = load_all(&root.join("personas"), Persona::load, |p| p.id.clone())?;
        let scenarios = load_all(&root.join("scenarios"), Scenario::load, |s| s.id.clone())?;
        for s in scenarios.values() {
            for (i, p) in s.personas.iter().enumerate() {
                if !personas.contains_key(p) {
                    return Err(Error::input(
                        &s.source,
                        format!("personas[{i}]"),
                        format!(
                            "persona `{p}` does not exist: add personas/{p}.yaml or fix the name"
                        ),
                    ));
                }
            }
        }
        let splits_path = root.join("data/splits.yaml");
        let splits = Splits::load(&splits_path)?;
        for (name, list) in [("train", &splits.train), ("test", &splits.test)] {
            for (i, id) in list.iter().enumerate() {
                let ok = scenarios
                    .get(&id.scenario)
                    .is_some_and(|s| s.personas.contains(&id.persona));
                if !ok {
                    return Err(Error::input(
                        &splits_path,
                        format!("{name}[{i}]"),
                        format!(
                            "{id}: the scenario must exist and list the persona under `personas`"
                        ),
                    ));
                }
            }
        }
        let presets = Presets::load(&root.join("data/difficulty.yaml"))?;
        let speaker = Arc::new(SpeakerRules::load(&root.join("data/speaker.yaml"))?);
        super::lines::check_personas(&personas, &speaker)?;
        super::lines::check_mood_lines(&scenarios, &personas, &speaker)?;
        super::lines::check_questions(&scenarios, &speaker)?;
        Ok(Catalog {
            root: root.to_path_buf(),
            scenarios,
            personas,
            splits,
            presets,
            speaker,
        })
    }

    /// Resolves one profile at a difficulty, applying the scenario's start emotion and `overrides`.
    pub fn profile(
        &self,
        id: &ProfileId,
        difficulty: Difficulty,
        overrides: &KnobOverrides,
    ) -> Result<Profile> {
        let scenario = self.scenarios.get(&id.scenario).ok_or_else(|| {
            Error::Other(format!(
                "unknown scenario `{}` in profile {id}: see `empathy-gym validate`",
                id.scenario
            ))
        })?;
        let persona = self.personas.get(&id.persona).ok_or_else(|| {
            Error::Other(format!("unknown persona `{}` in profile {id}", id.persona))
        })?;
        let knobs = overrides.resolve(self.presets.knobs(difficulty), scenario.start_emotion);
        knobs.validate(Path::new("<overrides>"), "difficulty.")?;
        Ok(Profile {
            id: id.clone(),
            scenario: scenario.clone(),
            persona: persona.clone(),
            difficulty,
            knobs,
            speaker: self.speaker.clone(),
        })
    }

    /// The profile ids of a split.
    pub fn split(&self, split: Split) -> &[ProfileId] {
        self.splits.get(split)
    }

    /// Coverage of the catalog.
    pub fn coverage(&self) -> Coverage {
        let train: BTreeSet<&str> = self
            .splits
            .train
            .iter()
            .map(|p| p.scenario.as_str())
            .collect();
        let test: BTreeSet<&str> = self
            .splits
            .test
            .iter()
            .map(|p| p.scenario.as_str())
            .collect();
        Coverage {
            scenarios: self.scenarios.len(),
            personas: self.personas.len(),
            topics: self.scenarios.values().map(|s| s.topic.clone()).collect(),
            needs: self.scenarios.values().map(|s| s.need).collect(),
            train_profiles: self.splits.train.len(),
            test_profiles: self.splits.test.len(),
            test_only_scenarios: test.difference(&train).count(),
            factual_scenarios: self
                .scenarios
                .values()
                .filter(|s| !s.factual.is_empty())
                .count(),
        }
    }
}

/// A root without the catalog folders is most often a command run outside the repository.
fn check_root(root: &Path) -> Result<()> {
    let missing: Vec<&str> = ["scenarios", "personas", "data"]
        .into_iter()
        .filter(|d| !root.join(d).is_dir())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::input(
        root,
        "catalog folder",
        format!(
            "no {}/ here; run the command in the repository (the folder holding scenarios/, \
             personas/ and data/), or point at it with --catalog DIR or EMPATHY_GYM_CATALOG",
            missing.join("/, no ")
        ),
    ))
}

fn load_all<T>(
    dir: &Path,
    load: impl Fn(&Path) -> Result<T>,
    id: impl Fn(&T) -> String,
) -> Result<BTreeMap<String, Arc<T>>> {
    let mut out = BTreeMap::new();
    for path in yaml_files(dir)? {
        let item = load(&path)?;
        out.insert(id(&item), Arc::new(item));
    }
    if out.is_empty() {
        return Err(Error::input(
            dir,
            "folder",
            "no *.yaml files found; is the catalog root right (--catalog)?",
        ));
    }
    Ok(out)
}
