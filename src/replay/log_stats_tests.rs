//! `episode_stats` pinned to hand-computed numbers on four small records.

use super::*;

/// A record at `step` on `scenario:persona` with user emotions `emotions`, one reply per step
/// between them, ending `end` with `reward`. Replies of 4 characters or more are appraised as cut
/// off mid-sentence and answer a factual question rightly; those of 6 or more invent too, which
/// mars the answer.
fn rec(
    step: u64,
    profile: &str,
    difficulty: &str,
    emotions: &[u8],
    reply: &str,
    end: &str,
    reward: f64,
) -> EpisodeRecord {
    let (scenario, persona) = profile.split_once(':').unwrap();
    let mut turns = vec![serde_json::json!({"role": "user", "text": "hi", "emotion": emotions[0]})];
    let components = if reply.len() >= 6 {
        serde_json::json!({"cut_off": -4.0, "invented": -8.0})
    } else if reply.len() >= 4 {
        serde_json::json!({"cut_off": -4.0})
    } else {
        serde_json::json!({})
    };
    let mut appraisal = serde_json::json!({"moves": {}, "components": components, "raw": 0.0,
        "warmth": 0.0, "reasons": []});
    if reply.len() >= 4 {
        appraisal["factual"] = if reply.len() >= 6 {
            "marred"
        } else {
            "correct"
        }
        .into();
    }
    for &e in &emotions[1..] {
        turns.push(serde_json::json!({"role": "assistant", "text": reply, "think": null}));
        turns.push(
            serde_json::json!({"role": "user", "text": "...", "emotion": e, "appraisal": appraisal}),
        );
    }
    serde_json::from_value(serde_json::json!({
        "schema": "empathy-gym/episode/v1", "step": step,
        "profile": {"scenario": scenario, "persona": persona, "difficulty": difficulty},
        "simulator": {"seed": 1}, "turns": turns, "end": end, "reward": reward,
    }))
    .unwrap()
}

fn records() -> Vec<EpisodeRecord> {
    vec![
        rec(
            1,
            "job:maya",
            "moderate",
            &[40, 50, 60],
            "abcd",
            "max_turns",
            0.6,
        ),
        rec(1, "job:leo", "hard", &[30, 6], "ab", "left", 0.1),
        rec(
            2,
            "job:maya",
            "moderate",
            &[40, 100],
            "abcdef",
            "resolved",
            1.0,
        ),
        rec(12, "move:leo", "easy", &[50, 0], "", "left", 0.1),
    ]
}

fn row<'a>(t: &'a Table, by: &str, group: &str) -> &'a [String] {
    t.rows
        .iter()
        .find(|r| r[0] == by && r[1] == group)
        .unwrap_or_else(|| panic!("no row {by}={group} in\n{}", t.to_markdown()))
}

#[test]
fn all_row_sums_every_episode() {
    let t = episode_stats(&records(), &StatsOptions::default());
    assert_eq!(t.headers, STATS_COLUMNS);
    // rewards (0.6 + 0.1 + 1 + 0.1) / 4 = 0.45; finals (60 + 6 + 100 + 0) / 4 = 41.5;
    // reply chars (4 + 4 + 2 + 6 + 0) / 5 = 3.2; cut off: 2 + 1 of 5 appraised replies; invented:
    // the one reply of 6 characters; marred: 1 of the 3 factual answers
    assert_eq!(
        row(&t, "all", "all"),
        [
            "all", "all", "4", "0.450", "41.5", "1", "2", "1", "0", "3", "0.600", "0.000", "0.200",
            "0.000", "0.000", "0.333"
        ]
    );
    // No factual answer among leo's replies: no share.
    assert_eq!(row(&t, "persona", "leo")[15], "-");
}

#[test]
fn groups_by_each_dimension_in_natural_order() {
    let t = episode_stats(&records(), &StatsOptions::default());
    assert_eq!(row(&t, "profile", "job:maya")[2..5], ["2", "0.800", "80.0"]);
    assert_eq!(
        row(&t, "persona", "leo")[2..8],
        ["2", "0.100", "3.0", "0", "2", "0"]
    );
    assert_eq!(row(&t, "scenario", "move")[8], "0");
    let diffs: Vec<&str> = t
        .rows
        .iter()
        .filter(|r| r[0] == "difficulty")
        .map(|r| r[1].as_str())
        .collect();
    assert_eq!(diffs, ["easy", "moderate", "hard"]);
    let ends: Vec<&str> = t
        .rows
        .iter()
        .filter(|r| r[0] == "end")
        .map(|r| r[1].as_str())
        .collect();
    assert_eq!(ends, ["resolved", "left", "max_turns"]);
    assert_eq!(row(&t, "reward_mode", "behavior")[2], "4");
}

#[test]
fn steps_fall_into_ranges() {
    // steps 1..=12: 12 steps, at most ten ranges -> width 2: 1-2, 11-12
    let t = episode_stats(&records(), &StatsOptions::default());
    let steps: Vec<(&str, &str)> = t
        .rows
        .iter()
        .filter(|r| r[0] == "step")
        .map(|r| (r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(steps, [("1-2", "3"), ("11-12", "1")]);
    let opts = StatsOptions {
        by: vec![By::Step],
        step_bin: Some(1),
    };
    let t = episode_stats(&records(), &opts);
    let steps: Vec<&str> = t.rows.iter().skip(1).map(|r| r[1].as_str()).collect();
    assert_eq!(steps, ["1", "2", "12"]);
    assert_eq!(
        t.rows.len(),
        4,
        "the all row plus three steps, no other dimension"
    );
}

#[test]
fn by_words_parse_and_print() {
    for b in By::ALL {
        assert_eq!(b.as_str().parse::<By>().unwrap(), b);
    }
    assert!("Step".parse::<By>().unwrap_err().contains("reward_mode"));
}
