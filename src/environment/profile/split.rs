//! Profiles (scenario:persona pairs) and the train/test split of `data/splits.yaml`.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which part of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    Train,
    Test,
}

impl Split {
    /// The word used in configs and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }
}

impl std::fmt::Display for Split {
    /// The word the config files and the JSONL use (never the Rust variant name).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Split {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "train" => Ok(Split::Train),
            "test" => Ok(Split::Test),
            other => Err(format!("unknown split `{other}`: use train or test")),
        }
    }
}

/// A profile: one scenario played by one persona, written `scenario:persona`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProfileId {
    pub scenario: String,
    pub persona: String,
}

impl ProfileId {
    /// Parses `scenario:persona`.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        match text.split_once(':') {
            Some((s, p)) if !s.is_empty() && !p.is_empty() && !p.contains(':') => Ok(ProfileId {
                scenario: s.to_string(),
                persona: p.to_string(),
            }),
            _ => Err(format!(
                "`{text}` is not a profile: write SCENARIO:PERSONA, e.g. job-loss:maya"
            )),
        }
    }
}

impl fmt::Display for ProfileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.scenario, self.persona)
    }
}

impl std::str::FromStr for ProfileId {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        ProfileId::parse(s)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SplitsFile {
    train: Vec<String>,
    test: Vec<String>,
}

/// The train and test profiles, in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct Splits {
    pub train: Vec<ProfileId>,
    pub test: Vec<ProfileId>,
}

impl Splits {
    /// Loads the split file; a malformed or duplicated profile names its list and index.
    pub fn load(path: &Path) -> Result<Self> {
        let file: SplitsFile = super::yaml::read_yaml(path)?;
        let parse = |name: &str, items: &[String]| -> Result<Vec<ProfileId>> {
            items
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    ProfileId::parse(s).map_err(|m| Error::input(path, format!("{name}[{i}]"), m))
                })
                .collect()
        };
        let splits = Splits {
            train: parse("train", &file.train)?,
            test: parse("test", &file.test)?,
        };
        let mut seen = std::collections::HashSet::new();
        for (name, list) in [("train", &splits.train), ("test", &splits.test)] {
            for (i, id) in list.iter().enumerate() {
                if !seen.insert(id.clone()) {
                    return Err(Error::input(
                        path,
                        format!("{name}[{i}]"),
                        format!("profile {id} is listed twice; keep it in one split once"),
                    ));
                }
            }
        }
        Ok(splits)
    }

    /// The profiles of one split.
    pub fn get(&self, split: Split) -> &[ProfileId] {
        match split {
            Split::Train => &self.train,
            Split::Test => &self.test,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_id_parses_and_prints() {
        let id = ProfileId::parse("job-loss:maya").unwrap();
        assert_eq!(id.scenario, "job-loss");
        assert_eq!(id.to_string(), "job-loss:maya");
        assert!(ProfileId::parse("job-loss").is_err());
        assert!(ProfileId::parse(":maya").is_err());
        assert!(ProfileId::parse("a:b:c").is_err());
    }
}
