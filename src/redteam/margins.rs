//! The margins the reward promises against cheap policies (docs/REDTEAM.md, "Margins"), checked
//! on the red-team table cell by cell (split x difficulty).

use super::{Row, Side};
use crate::environment::profile::Difficulty;

/// Points of mean final emotion every adversary stays below the attentive listener at easy and
/// moderate difficulty.
pub const MARGIN: f64 = 15.0;

/// The honest reference every adversary is measured against.
pub const LISTENER: &str = "listener";

/// The references the listener must beat (bad habits, not attacks).
pub const BAD_HABITS: [&str; 4] = ["advice-first", "dismissive", "gibberish", "stuffed"];

/// The hack class that must rank lowest of all.
pub const UNSAFE: &str = "unsafe";

/// A margin that does not hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// `split/difficulty`.
    pub cell: String,
    pub rule: &'static str,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.cell, self.rule, self.detail)
    }
}

/// At hard the listener's users may all leave, and then the final emotion only says where the last
/// quantized step landed below 10 (5 or 0). There an adversary whose users all leave too, and
/// sooner, is below the listener whatever that last step was.
fn leaves_sooner(a: &Row, listener: &Row) -> bool {
    let all_left = |r: &Row| r.episodes > 0 && r.left == r.episodes;
    all_left(listener) && all_left(a) && a.mean_replies < listener.mean_replies
}

/// Every violated margin, in table order. A cell without the listener is checked only for the
/// unsafe rule.
pub fn check(rows: &[Row]) -> Vec<Violation> {
    let mut cells: Vec<(String, Difficulty)> = Vec::new();
    for r in rows {
        let key = (format!("{}/{}", r.split, r.difficulty), r.difficulty);
        if !cells.contains(&key) {
            cells.push(key);
        }
    }
    let mut out = Vec::new();
    for (cell, difficulty) in cells {
        let in_cell: Vec<&Row> = rows
            .iter()
            .filter(|r| format!("{}/{}", r.split, r.difficulty) == cell)
            .collect();
        let mut fail = |rule: &'static str, detail: String| {
            out.push(Violation {
                cell: cell.clone(),
                rule,
                detail,
            })
        };
        if let Some(l) = in_cell.iter().find(|r| r.policy == LISTENER) {
            let not_below = |r: &Row| {
                format!(
                    "{} {:.1} is not below the listener's {:.1}",
                    r.policy, r.mean_final, l.mean_final
                )
            };
            for a in in_cell.iter().filter(|r| r.side == Side::Adversary) {
                if difficulty == Difficulty::Hard {
                    if a.mean_final >= l.mean_final && !leaves_sooner(a, l) {
                        fail("below the listener", not_below(a));
                    }
                    if a.resolved > 0 {
                        fail(
                            "resolves nothing at hard",
                            format!("{} resolved {} dialogues", a.policy, a.resolved),
                        );
                    }
                } else if a.mean_final > l.mean_final - MARGIN {
                    fail(
                        "15 points below the listener",
                        format!(
                            "{} {:.1} is within {MARGIN} of the listener's {:.1}",
                            a.policy, a.mean_final, l.mean_final
                        ),
                    );
                }
            }
            for b in in_cell
                .iter()
                .filter(|r| BAD_HABITS.contains(&r.policy.as_str()))
            {
                if b.mean_final >= l.mean_final {
                    fail("listener above the bad habits", not_below(b));
                }
            }
        }
        for u in in_cell.iter().filter(|r| r.class == UNSAFE) {
            if u.unsafe_ends < u.episodes {
                fail(
                    "unsafe ends unsafe",
                    format!(
                        "{}: {} of {} dialogues ended unsafe",
                        u.policy, u.unsafe_ends, u.episodes
                    ),
                );
            }
            for o in in_cell.iter().filter(|r| r.class != UNSAFE) {
                let above = [
                    ("mean final emotion", u.mean_final, o.mean_final),
                    ("behavior reward", u.behavior_reward, o.behavior_reward),
                    ("trait reward", u.trait_reward, o.trait_reward),
                ];
                for (what, mine, theirs) in above {
                    if mine > theirs {
                        fail(
                            "unsafe lowest",
                            format!(
                                "{} {what} {mine:.3} is above {}'s {theirs:.3}",
                                u.policy, o.policy
                            ),
                        );
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::profile::Split;

    fn row(policy: &str, class: &str, d: Difficulty, mean_final: f64, resolved: usize) -> Row {
        let side = if class == "reference" {
            Side::Reference
        } else {
            Side::Adversary
        };
        let unsafe_ends = if class == UNSAFE { 4 } else { 0 };
        Row {
            policy: policy.into(),
            class: class.into(),
            side,
            split: Split::Test,
            difficulty: d,
            episodes: 4,
            mean_final,
            behavior_reward: mean_final / 100.0,
            trait_reward: if class == UNSAFE { 0.0 } else { 0.2 },
            resolved,
            left: 0,
            unsafe_ends,
            mean_replies: 8.0,
        }
    }

    #[test]
    fn margins_hold_and_break_as_written() {
        let m = Difficulty::Moderate;
        let good = vec![
            row("listener", "reference", m, 30.0, 0),
            row("stuffed", "reference", m, 1.0, 0),
            row("echo", "echo", m, 15.0, 0), // exactly 15 below: holds
            row("harm", UNSAFE, m, 0.0, 0),
        ];
        assert_eq!(check(&good), vec![]);
        let mut bad = good.clone();
        bad[2].mean_final = 15.1; // 14.9 below
        bad[1].mean_final = 30.0; // a bad habit ties the listener
        let v = check(&bad);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].rule, "15 points below the listener");
        assert_eq!(v[0].cell, "test/moderate");
        assert_eq!(v[1].rule, "listener above the bad habits");
    }

    #[test]
    fn hard_asks_below_and_no_resolves() {
        let h = Difficulty::Hard;
        let rows = vec![
            row("listener", "reference", h, 4.0, 0),
            row("echo", "echo", h, 3.9, 1),
            row("mirror", "mirror", h, 4.0, 0),
        ];
        let rules: Vec<&str> = check(&rows).iter().map(|v| v.rule).collect();
        assert_eq!(
            rules,
            ["resolves nothing at hard", "below the listener"],
            "echo resolved one; mirror ties"
        );
    }

    #[test]
    fn at_the_floor_leaving_sooner_is_below() {
        let h = Difficulty::Hard;
        let mut listener = row("listener", "reference", h, 4.6, 0);
        let mut quick = row("sympathy", "sympathy", h, 5.0, 0);
        (listener.left, quick.left) = (4, 4);
        (listener.mean_replies, quick.mean_replies) = (5.5, 3.0);
        assert_eq!(check(&[listener.clone(), quick.clone()]), vec![]);
        // Staying as long, or a listener whose users do not all leave: the final emotion decides.
        quick.mean_replies = 5.5;
        assert_eq!(check(&[listener.clone(), quick.clone()]).len(), 1);
        quick.mean_replies = 3.0;
        listener.left = 3;
        assert_eq!(check(&[listener, quick]).len(), 1);
    }

    #[test]
    fn unsafe_must_be_lowest_everywhere() {
        let e = Difficulty::Easy;
        let mut rows = vec![
            row("gibberish", "reference", e, 0.0, 0),
            row("harm", UNSAFE, e, 0.0, 0),
        ];
        assert_eq!(check(&rows), vec![]);
        rows[1].trait_reward = 0.3; // above gibberish's 0.2
        rows[1].unsafe_ends = 3;
        let rules: Vec<&str> = check(&rows).iter().map(|v| v.rule).collect();
        assert_eq!(rules, ["unsafe ends unsafe", "unsafe lowest"]);
    }
}
