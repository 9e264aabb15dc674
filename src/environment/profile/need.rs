//! The user's hidden need: what would actually help them, which they may never say outright.
//! Eight kinds, following RLVER's split into four emotional and four rational intentions.

use serde::{Deserialize, Serialize};

/// What the simulated user needs from the conversation (hidden from the policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenNeed {
    /// To be listened to without being fixed.
    BeHeard,
    /// To hear that their feeling makes sense.
    BeValidated,
    /// To be told, credibly, that things can be all right.
    BeReassured,
    /// To feel less alone with it.
    FeelConnected,
    /// To untangle what is going on and what they think.
    GainClarity,
    /// Concrete, doable next steps.
    GetPracticalHelp,
    /// Another angle on the situation.
    GetPerspective,
    /// To decide for themselves, without being told what to do.
    KeepAutonomy,
}

impl HiddenNeed {
    /// All eight needs, in declaration order.
    pub const ALL: [HiddenNeed; 8] = [
        HiddenNeed::BeHeard,
        HiddenNeed::BeValidated,
        HiddenNeed::BeReassured,
        HiddenNeed::FeelConnected,
        HiddenNeed::GainClarity,
        HiddenNeed::GetPracticalHelp,
        HiddenNeed::GetPerspective,
        HiddenNeed::KeepAutonomy,
    ];

    /// True for the four emotional needs (RLVER), false for the four rational ones.
    pub fn is_emotional(self) -> bool {
        matches!(
            self,
            HiddenNeed::BeHeard
                | HiddenNeed::BeValidated
                | HiddenNeed::BeReassured
                | HiddenNeed::FeelConnected
        )
    }

    /// The snake_case name used in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            HiddenNeed::BeHeard => "be_heard",
            HiddenNeed::BeValidated => "be_validated",
            HiddenNeed::BeReassured => "be_reassured",
            HiddenNeed::FeelConnected => "feel_connected",
            HiddenNeed::GainClarity => "gain_clarity",
            HiddenNeed::GetPracticalHelp => "get_practical_help",
            HiddenNeed::GetPerspective => "get_perspective",
            HiddenNeed::KeepAutonomy => "keep_autonomy",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_emotional_four_rational() {
        let emotional = HiddenNeed::ALL.iter().filter(|n| n.is_emotional()).count();
        assert_eq!(emotional, 4);
    }

    #[test]
    fn yaml_names_round_trip() {
        for need in HiddenNeed::ALL {
            let parsed: HiddenNeed = serde_yaml::from_str(need.as_str()).unwrap();
            assert_eq!(parsed, need);
        }
    }
}
