//! Which advantage estimator feeds the shared clipped policy loss (`algorithm:` in the config),
//! and how GRPO assigns credit to the turns of a dialogue (`grpo.credit:`). Variants are enums,
//! not strings compared in branches (STYLE "The trainer").

use serde::{Deserialize, Serialize};

/// The training algorithm: every one runs the same rollout loop, the same policy loss, the same
/// checkpoints; they differ only in how advantages are estimated.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Group-relative advantages (DeepSeekMath; RLVER). The default.
    #[default]
    Grpo,
    /// Actor-critic PPO (Schulman et al. 2017): a learned value head on its own LoRA adapters,
    /// GAE(gamma, lambda) advantages (Schulman et al. 2016) whitened over the batch.
    Ppo,
    /// REINFORCE with a leave-one-out baseline (Ahmadian et al. 2024).
    Rloo,
    /// REINFORCE++ (Hu 2025): discounted returns whitened over the batch's policy tokens.
    ReinforcePp,
}

impl Algorithm {
    /// The word the config files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Grpo => "grpo",
            Algorithm::Ppo => "ppo",
            Algorithm::Rloo => "rloo",
            Algorithm::ReinforcePp => "reinforce_pp",
        }
    }

    /// True when the algorithm trains a critic.
    pub fn has_critic(self) -> bool {
        self == Algorithm::Ppo
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How GRPO's group-relative advantage is spread over a dialogue's turns.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Credit {
    /// One advantage for every token of the dialogue, from its total reward. The default.
    #[default]
    Episode,
    /// Each policy turn gets the group-relative advantage of its return-to-go (the sum of the
    /// remaining turn rewards), normalized across the group at the same turn index.
    Turn,
}

impl Credit {
    /// The word `grpo.credit` in the config uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Credit::Episode => "episode",
            Credit::Turn => "turn",
        }
    }
}

impl std::fmt::Display for Credit {
    /// The config word, never the Rust variant name: what a person reads matches the config.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_and_print() {
        for (word, a) in [
            ("grpo", Algorithm::Grpo),
            ("ppo", Algorithm::Ppo),
            ("rloo", Algorithm::Rloo),
            ("reinforce_pp", Algorithm::ReinforcePp),
        ] {
            assert_eq!(serde_yaml::from_str::<Algorithm>(word).unwrap(), a);
            assert_eq!(a.to_string(), word);
            assert_eq!(serde_yaml::to_string(&a).unwrap().trim(), word);
        }
        assert_eq!(
            serde_yaml::from_str::<Credit>("turn").unwrap(),
            Credit::Turn
        );
        assert!(serde_yaml::from_str::<Algorithm>("dpo").is_err());
    }
}
