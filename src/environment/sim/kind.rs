//! Which simulated user plays a dialogue: the word of `--simulator`, of a training config's
//! `simulator.kind`, and of the records' `simulator.kind`.

use serde::{Deserialize, Serialize};

/// The simulated user a command or a training run builds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SimulatorKind {
    /// The built-in appraiser (deterministic, explainable; docs/REWARD.md). The default.
    #[default]
    Appraiser,
    /// An LLM plays the user (`src/environment/sim/llm`, settings in `configs/simulator/llm.yaml`).
    Llm,
}

impl SimulatorKind {
    /// The snake_case word of the command line, the config files and the records.
    pub fn as_str(self) -> &'static str {
        match self {
            SimulatorKind::Appraiser => "appraiser",
            SimulatorKind::Llm => "llm",
        }
    }
}

impl std::fmt::Display for SimulatorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SimulatorKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "appraiser" => Ok(SimulatorKind::Appraiser),
            "llm" => Ok(SimulatorKind::Llm),
            other => Err(format!("unknown simulator `{other}`: use appraiser or llm")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for k in [SimulatorKind::Appraiser, SimulatorKind::Llm] {
            assert_eq!(k.as_str().parse::<SimulatorKind>(), Ok(k));
            assert_eq!(serde_yaml::to_string(&k).unwrap().trim(), k.as_str());
        }
        assert!("gpt"
            .parse::<SimulatorKind>()
            .unwrap_err()
            .contains("appraiser or llm"));
    }
}
