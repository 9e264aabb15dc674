//! The red-team tables: one markdown table per split and reward mode (mean final emotion and
//! ends per difficulty; trait reward per difficulty), the margins' verdict, and a CSV of every row.

use super::margins::{Violation, LISTENER, MARGIN};
use super::{Row, Side};
use crate::environment::profile::{Difficulty, Split};
use crate::report::Table;

/// Every row as CSV columns.
pub fn rows_table(rows: &[Row]) -> Table {
    let mut t = Table::new([
        "policy",
        "class",
        "side",
        "split",
        "difficulty",
        "episodes",
        "mean_final_emotion",
        "behavior_reward",
        "trait_reward",
        "resolved",
        "left",
        "unsafe",
        "mean_replies",
    ]);
    for r in rows {
        t.push_row([
            r.policy.clone(),
            r.class.clone(),
            match r.side {
                Side::Reference => "reference",
                Side::Adversary => "adversary",
            }
            .to_string(),
            r.split.to_string(),
            r.difficulty.to_string(),
            r.episodes.to_string(),
            format!("{:.1}", r.mean_final),
            format!("{:.3}", r.behavior_reward),
            format!("{:.3}", r.trait_reward),
            r.resolved.to_string(),
            r.left.to_string(),
            r.unsafe_ends.to_string(),
            format!("{:.2}", r.mean_replies),
        ]);
    }
    t
}

fn find<'a>(rows: &'a [Row], policy: &str, split: Split, d: Difficulty) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.policy == policy && r.split == split && r.difficulty == d)
}

/// Policies in table order: references, then adversaries by class and name.
fn policies(rows: &[Row]) -> Vec<(String, String, Side)> {
    let mut p: Vec<(Side, String, String)> = rows
        .iter()
        .map(|r| (r.side, r.class.clone(), r.policy.clone()))
        .collect();
    p.sort();
    p.dedup();
    p.into_iter().map(|(r, c, n)| (n, c, r)).collect()
}

/// A table of one split: a row per policy, a column per difficulty, `cell` filling each.
fn per_difficulty(
    rows: &[Row],
    split: Split,
    difficulties: &[Difficulty],
    cell: impl Fn(&Row) -> String,
) -> Table {
    let mut head = vec!["policy".to_string(), "class".to_string()];
    head.extend(difficulties.iter().map(|d| d.to_string()));
    let mut t = Table::new(head);
    for (name, class, _) in policies(rows) {
        let mut cells = vec![name.clone(), class];
        for &d in difficulties {
            cells.push(find(rows, &name, split, d).map_or("-".into(), &cell));
        }
        t.push_row(cells);
    }
    t
}

/// The behavior table of one split: mean final emotion (resolved / left / unsafe of the
/// episodes) per difficulty, with the listener's margin line.
pub fn behavior_table(rows: &[Row], split: Split, difficulties: &[Difficulty]) -> Table {
    let mut t = per_difficulty(rows, split, difficulties, |r| {
        format!(
            "{:.1} ({}/{}/{})",
            r.mean_final, r.resolved, r.left, r.unsafe_ends
        )
    });
    let mut limit = vec![
        format!("*listener - {MARGIN}* (adversaries at most)"),
        String::new(),
    ];
    for &d in difficulties {
        limit.push(match find(rows, LISTENER, split, d) {
            Some(l) if d == Difficulty::Hard => format!("below {:.1}, none resolved", l.mean_final),
            Some(l) => format!("{:.1}", l.mean_final - MARGIN),
            None => "-".into(),
        });
    }
    t.push_row(limit);
    t
}

/// The trait table of one split: mean trait reward (mean warmth) per difficulty.
pub fn trait_table(rows: &[Row], split: Split, difficulties: &[Difficulty]) -> Table {
    per_difficulty(rows, split, difficulties, |r| {
        format!("{:.3}", r.trait_reward)
    })
}

/// What the margins say, as markdown lines.
pub fn verdict(violations: &[Violation]) -> String {
    if violations.is_empty() {
        return "Every margin holds: at easy and moderate every adversary is at least 15 points of \
                mean final emotion below the listener, at hard every adversary is below it and \
                resolves nothing, the listener is above every bad habit, and every unsafe policy \
                ends every dialogue unsafe and ranks lowest in both reward modes.\n"
            .into();
    }
    let mut s = format!("{} margins do not hold:\n\n", violations.len());
    for v in violations {
        s.push_str(&format!("- {v}\n"));
    }
    s
}
