//! The 18-condition grid of the factual evaluation (warmth paper, Ibrahim, Hafner & Rocher,
//! arXiv 2507.21919): 9 contexts (plain; a happy, sad or angry user; a close relation, a user who
//! defers, a user who speaks down; high or low stakes) x the user's wrong belief absent or present.
//! Every QA item becomes exactly 18 prompts, in [`Condition::all`] order; the wording comes from
//! `data/factual/contexts.yaml` (see [`super::contexts`]), and a seed picks among phrase variants.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::contexts::{Context, Contexts};
use crate::environment::qa::{Belief, QaItem};

/// One cell of the grid: a context and whether the wrong belief is stated.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Condition {
    /// The interpersonal context.
    pub context: Context,
    /// Whether the user states the wrong answer.
    pub belief: Belief,
}

impl Condition {
    /// Number of conditions (9 contexts x 2 beliefs).
    pub const COUNT: usize = 18;

    /// All 18 conditions: context-major, the belief absent before present.
    pub fn all() -> [Condition; Condition::COUNT] {
        std::array::from_fn(|i| Condition {
            context: Context::ALL[i / 2],
            belief: if i % 2 == 0 {
                Belief::Absent
            } else {
                Belief::Present
            },
        })
    }

    /// Position in [`Condition::all`].
    pub fn index(self) -> usize {
        self.context.index() * 2 + self.belief as usize
    }

    /// Stable name (`emotion_sad` or `emotion_sad+wrong`).
    pub fn name(self) -> String {
        match self.belief {
            Belief::Absent => self.context.name().to_string(),
            Belief::Present => format!("{}+wrong", self.context.name()),
        }
    }

    /// Short label for charts (`sad`, `sad + wrong`).
    pub fn label(self) -> String {
        match self.belief {
            Belief::Absent => self.context.label().to_string(),
            Belief::Present => format!("{} + wrong", self.context.label()),
        }
    }
}

/// One prompt of the evaluation: which item, which condition, and the user message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConditionPrompt {
    /// The QA item's id.
    pub item_id: String,
    /// The grid cell.
    pub condition: Condition,
    /// The full user message sent to the model.
    pub text: String,
}

/// The wording plus the seed that picks phrase variants: turns QA items into prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionGrid {
    /// Validated context and wrong-belief wording.
    pub contexts: Contexts,
    /// Picks the phrase variant per item and context; same seed, same prompts.
    pub seed: u64,
}

impl ConditionGrid {
    /// A grid from loaded wording and a seed.
    pub fn new(contexts: Contexts, seed: u64) -> Self {
        ConditionGrid { contexts, seed }
    }

    /// Exactly 18 prompts for `item`, in [`Condition::all`] order. The variants depend only on the
    /// seed and the item id (not on other items), and each context uses the same sentence with and
    /// without the wrong belief, so the two conditions differ only by the belief.
    pub fn prompts(&self, item: &QaItem) -> Vec<ConditionPrompt> {
        let mut rng =
            ChaCha8Rng::seed_from_u64(self.seed ^ crate::seed::fnv1a64(item.id.as_bytes()));
        let mut out = Vec::with_capacity(Condition::COUNT);
        for context in Context::ALL {
            let phrases = self.contexts.phrases(context);
            let ctx = pick(&mut rng, phrases);
            let belief = pick(&mut rng, &self.contexts.wrong_belief)
                .map(|b| b.replace("{wrong}", item.wrong.trim()));
            for b in [Belief::Absent, Belief::Present] {
                let mut parts: Vec<&str> = Vec::with_capacity(4);
                parts.extend(ctx.map(String::as_str));
                parts.push(item.question.trim());
                if b == Belief::Present {
                    parts.extend(belief.as_deref());
                }
                parts.extend(self.contexts.instruction.as_deref());
                out.push(ConditionPrompt {
                    item_id: item.id.clone(),
                    condition: Condition { context, belief: b },
                    text: parts.join(" "),
                });
            }
        }
        out
    }

    /// Prompts for every item, item-major: item 0's 18 conditions, then item 1's, ...
    pub fn all_prompts(&self, items: &[QaItem]) -> Vec<ConditionPrompt> {
        items.iter().flat_map(|it| self.prompts(it)).collect()
    }
}

/// One random element of `list`, or `None` when it is empty. Always draws, so the stream does not
/// shift with list lengths of other contexts.
fn pick<'a>(rng: &mut ChaCha8Rng, list: &'a [String]) -> Option<&'a String> {
    let r: u32 = rng.random();
    if list.is_empty() {
        None
    } else {
        list.get(r as usize % list.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eighteen_distinct_conditions_with_matching_indices() {
        let all = Condition::all();
        for (i, c) in all.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
        let names: std::collections::BTreeSet<String> = all.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), 18);
        assert_eq!(all[5].name(), "emotion_sad+wrong");
        assert_eq!(all[5].label(), "sad + wrong");
    }
}
