//! `replay stats LOG.jsonl...`: the aggregate table on stdout and as CSV, over several logs, with
//! numbers that match the records themselves.

use std::path::Path;

use empathy_gym::environment::episode::{read_episodes, End};
use empathy_gym::replay::STATS_COLUMNS;

use super::common::*;

/// The scripted listener these tests roll out, and its seed.
const REPLIES: &[&str] = &[
    "That sounds so hard. What has been the worst part?",
    "You should just move on.",
];
const SEED: u64 = 5;

fn csv_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(str::to_string).collect())
        .collect();
    (headers, rows)
}

#[test]
fn stats_aggregate_several_logs_on_stdout_and_as_csv() {
    let dir = temp_dir();
    let (easy, hard) = (dir.path().join("easy.jsonl"), dir.path().join("hard.jsonl"));
    scripted_rollout(dir.path(), REPLIES, "easy", SEED, &easy);
    scripted_rollout(dir.path(), REPLIES, "hard", SEED, &hard);
    let csv = dir.path().join("stats.csv");
    let o = eg(&[
        "replay",
        "stats",
        easy.to_str().unwrap(),
        hard.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let out = output_of(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.starts_with("| by | group | episodes | mean_reward |"),
        "{out}"
    );
    assert_words_for_people("replay stats", &out);

    let records: Vec<_> = [&easy, &hard]
        .iter()
        .flat_map(|f| {
            read_episodes(f)
                .unwrap()
                .records
                .into_iter()
                .map(|(_, r)| r)
        })
        .collect();
    let n = records.len();
    let mean_final = records
        .iter()
        .map(|r| f64::from(r.final_emotion()))
        .sum::<f64>()
        / n as f64;
    let left = records.iter().filter(|r| r.end == Some(End::Left)).count();

    let (headers, rows) = csv_rows(&csv);
    assert_eq!(headers, STATS_COLUMNS);
    let all = &rows[0];
    assert_eq!(all[..3], ["all", "all", &n.to_string()]);
    assert_eq!(all[4], format!("{mean_final:.1}"));
    assert_eq!(all[6], left.to_string());
    for by in [
        "profile",
        "scenario",
        "persona",
        "difficulty",
        "reward_mode",
        "end",
        "step",
    ] {
        assert!(rows.iter().any(|r| r[0] == by), "no {by} rows");
    }
    let difficulty: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r[0] == "difficulty")
        .map(|r| (r[1].as_str(), r[2].as_str()))
        .collect();
    let half = (n / 2).to_string();
    assert_eq!(
        difficulty,
        [("easy", half.as_str()), ("hard", half.as_str())]
    );
    // Each block of a dimension covers every episode once.
    for by in ["profile", "end", "step"] {
        let total: usize = rows
            .iter()
            .filter(|r| r[0] == by)
            .map(|r| r[2].parse::<usize>().unwrap())
            .sum();
        assert_eq!(total, n, "{by}");
    }
}

#[test]
fn stats_group_only_by_what_was_asked_and_reject_unknown_words() {
    let dir = temp_dir();
    let log = dir.path().join("run.jsonl");
    scripted_rollout(dir.path(), REPLIES, "moderate", SEED, &log);
    let o = eg(&[
        "replay",
        "stats",
        log.to_str().unwrap(),
        "--by",
        "end,difficulty",
    ]);
    let out = output_of(&o);
    assert!(o.status.success(), "{out}");
    let bys: std::collections::BTreeSet<&str> = out
        .lines()
        .skip(2)
        .filter_map(|l| l.split('|').nth(1).map(str::trim))
        .collect();
    assert_eq!(bys, ["all", "difficulty", "end"].into_iter().collect());
    let o = eg(&["replay", "stats", log.to_str().unwrap(), "--by", "mood"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        output_of(&o).contains("unknown grouping `mood`"),
        "{}",
        output_of(&o)
    );
    std::fs::write(dir.path().join("bad.jsonl"), "{not json\n").unwrap();
    let bad = dir.path().join("bad.jsonl");
    let o = eg(&[
        "replay",
        "stats",
        log.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", output_of(&o));
    assert!(output_of(&o).contains("bad.jsonl"), "{}", output_of(&o));
}
