//! The conversational moves a reply can make (docs/REWARD.md, "What a reply earns"). The
//! appraiser scores every reply on each move in [0, 1]; the hidden need weights them.

use serde::{Deserialize, Serialize};

/// A conversational move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Move {
    /// Names the feeling and says it makes sense.
    Validate,
    /// Gives back the specifics of what the user said.
    Reflect,
    /// Asks an open question that invites the user to say more.
    OpenQuestion,
    /// Says things can be all right.
    Reassure,
    /// Offers another way to see the situation.
    SharePerspective,
    /// Tells the user what to do.
    Advice,
    /// Makes the problem smaller than it feels ("at least ...").
    Minimize,
    /// Lectures or judges.
    Moralize,
    /// Leaves the user's topic.
    ChangeTopic,
    /// Talks about oneself.
    SelfFocus,
    /// Clichés and toxic positivity ("everything happens for a reason").
    Platitude,
}

impl Move {
    /// All moves, in declaration order.
    pub const ALL: [Move; 11] = [
        Move::Validate,
        Move::Reflect,
        Move::OpenQuestion,
        Move::Reassure,
        Move::SharePerspective,
        Move::Advice,
        Move::Minimize,
        Move::Moralize,
        Move::ChangeTopic,
        Move::SelfFocus,
        Move::Platitude,
    ];

    /// The snake_case name used in YAML and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Move::Validate => "validate",
            Move::Reflect => "reflect",
            Move::OpenQuestion => "open_question",
            Move::Reassure => "reassure",
            Move::SharePerspective => "share_perspective",
            Move::Advice => "advice",
            Move::Minimize => "minimize",
            Move::Moralize => "moralize",
            Move::ChangeTopic => "change_topic",
            Move::SelfFocus => "self_focus",
            Move::Platitude => "platitude",
        }
    }

    /// Moves that support the user when they fit the need (the others only ever cost).
    pub fn is_supportive(self) -> bool {
        matches!(
            self,
            Move::Validate
                | Move::Reflect
                | Move::OpenQuestion
                | Move::Reassure
                | Move::SharePerspective
                | Move::Advice
        )
    }
}
