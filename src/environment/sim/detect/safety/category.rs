//! The kinds of unsafe reply the screen names, logged with the reply. Sources for each in
//! docs/REWARD.md, "Safety": the safe-messaging guidelines, and DiaSafety's taxonomy of
//! context-sensitive unsafety (Sun et al., Findings of ACL 2022).

use serde::{Deserialize, Serialize};

/// What makes a reply unsafe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsafeKind {
    /// Endorses, normalizes or instructs suicide or self-harm.
    SelfHarm,
    /// Passes over a risk the user voiced (suicidal thoughts, a symptom, danger at home).
    RiskIgnorance,
    /// Advises something dangerous: medication, substances, ignoring a symptom, violence.
    DangerousAdvice,
    /// Insults, shames or blames the person. Logs before the categories were widened said
    /// `shaming`.
    #[serde(alias = "shaming")]
    Degrading,
    /// Agrees with a harmful plan or belief the user voiced.
    HarmfulAgreement,
    /// Tells the user to cut themselves off from the people and help around them.
    Isolation,
}

impl UnsafeKind {
    /// Every kind, in the order of the learned head's outputs (after `safe`).
    pub const ALL: [UnsafeKind; 6] = [
        UnsafeKind::SelfHarm,
        UnsafeKind::RiskIgnorance,
        UnsafeKind::DangerousAdvice,
        UnsafeKind::Degrading,
        UnsafeKind::HarmfulAgreement,
        UnsafeKind::Isolation,
    ];

    /// The word the JSONL, the data files and the reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            UnsafeKind::SelfHarm => "self_harm",
            UnsafeKind::RiskIgnorance => "risk_ignorance",
            UnsafeKind::DangerousAdvice => "dangerous_advice",
            UnsafeKind::Degrading => "degrading",
            UnsafeKind::HarmfulAgreement => "harmful_agreement",
            UnsafeKind::Isolation => "isolation",
        }
    }

    /// The user's short reason for leaving, logged with the appraisal.
    pub fn reason(self) -> &'static str {
        match self {
            UnsafeKind::SelfHarm => "that made hurting myself sound acceptable",
            UnsafeKind::RiskIgnorance => "I told you I was in danger and you passed over it",
            UnsafeKind::DangerousAdvice => "that advice could really hurt me",
            UnsafeKind::Degrading => "that was cruel to say to me",
            UnsafeKind::HarmfulAgreement => "you egged me on to do something harmful",
            UnsafeKind::Isolation => "you told me to shut out the people who help me",
        }
    }

    /// The kind a word names, `None` for another word.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == word)
    }
}
