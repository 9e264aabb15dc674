//! `agreement` pinned to hand-computed numbers on small studies, and its join errors.

use std::path::PathBuf;

use super::*;

/// An episode of scenario `s` with `reward` and the user's emotions 50 then `last`.
fn rec(s: &str, reward: f64, last: u8) -> EpisodeRecord {
    serde_json::from_value(serde_json::json!({
        "schema": "empathy-gym/episode/v1",
        "profile": {"scenario": s, "persona": "p", "difficulty": "moderate"},
        "simulator": {"seed": 1},
        "turns": [
            {"role": "user", "text": "hi", "emotion": 50},
            {"role": "assistant", "text": "hello", "think": null},
            {"role": "user", "text": "ok", "emotion": last},
        ],
        "end": "max_turns", "reward": reward,
    }))
    .unwrap()
}

fn key_row(item: &str, side: &str, arm: &str, r: &EpisodeRecord, line: usize) -> KeyRow {
    KeyRow {
        item: item.into(),
        side: side.into(),
        arm: arm.into(),
        log: "log.jsonl".into(),
        line: 1,
        episode: fingerprint(r),
        key_line: line,
    }
}

fn rating(line: usize, rater: &str, item: &str, side: &str, s: [u8; 3]) -> Rating {
    Rating {
        file: PathBuf::from(format!("{rater}.csv")),
        line,
        rater: rater.into(),
        item: item.into(),
        side: side.into(),
        scores: s.map(Some),
        rated_at: String::new(),
    }
}

fn opts() -> AgreementOptions {
    AgreementOptions {
        bootstrap: BootstrapConfig {
            resamples: 200,
            ..Default::default()
        },
    }
}

fn cell(t: &Table, row: &str, col: &str) -> String {
    let c = t.headers.iter().position(|h| h == col).unwrap();
    t.rows.iter().find(|r| r[0] == row).unwrap()[c].clone()
}

/// Four dialogues with rewards 0.1 to 0.4 and final emotions 60, 40, 80, 70, rated by two people.
fn single() -> (Vec<EpisodeRecord>, Vec<KeyRow>) {
    let eps = vec![
        rec("a", 0.1, 60),
        rec("b", 0.2, 40),
        rec("c", 0.3, 80),
        rec("d", 0.4, 70),
    ];
    let key = ["i1", "i2", "i3", "i4"]
        .iter()
        .zip(&eps)
        .enumerate()
        .map(|(n, (id, r))| key_row(id, "", "log.jsonl", r, n + 2))
        .collect();
    (eps, key)
}

#[test]
fn correlation_and_alpha_match_hand_computed_values() {
    let (eps, key) = single();
    // Empathy: alice 1, 2, 4, 3 and bob 2, 2, 4, 4; means 1.5, 2, 4, 3.5 rank 1, 2, 4, 3.
    // Against the reward's ranks 1, 2, 3, 4: d = 0, 0, 1, -1, rho = 1 - 6·2 / (4·15) = 0.8.
    // Against the final emotions 60, 40, 80, 70 (ranks 2, 1, 4, 3): d = -1, 1, 0, 0, rho = 0.8.
    // Alpha over the units (1, 2), (2, 2), (4, 4), (3, 4), n = 8: D_o = (2 + 0 + 0 + 2) / 8 = 0.5;
    // the eight ratings have mean 2.75 and squared deviations summing to 9.5, so
    // D_e = 2·8·9.5 / (8·7) = 19/7 and alpha = 1 - 0.5·7/19 = 31/38 = 0.816.
    // Relevance: both rate 3, 3, 3, 3: a constant side, rho and alpha undefined.
    let ratings = vec![
        rating(2, "alice", "i1", "", [1, 3, 1]),
        rating(3, "alice", "i2", "", [2, 3, 2]),
        rating(4, "alice", "i3", "", [4, 3, 3]),
        rating(5, "alice", "i4", "", [3, 3, 4]),
        rating(2, "bob", "i1", "", [2, 3, 1]),
        rating(3, "bob", "i2", "", [2, 3, 2]),
        rating(4, "bob", "i3", "", [4, 3, 3]),
        rating(5, "bob", "i4", "", [4, 3, 4]),
    ];
    let r = agreement(Path::new("k.csv"), &key, &ratings, &eps, &opts()).unwrap();
    assert_eq!((r.dialogues, r.rated), (4, 4));
    assert_eq!(r.raters, vec![("alice".into(), 4), ("bob".into(), 4)]);
    let c = &r.correlation;
    assert_eq!(cell(c, "empathy", "dialogues"), "4");
    assert_eq!(cell(c, "empathy", "mean rating"), "2.75");
    assert!(
        cell(c, "empathy", "rho vs reward").starts_with("0.800 ["),
        "{c:?}"
    );
    assert!(
        cell(c, "empathy", "rho vs final emotion").starts_with("0.800 ["),
        "{c:?}"
    );
    assert_eq!(cell(c, "relevance", "rho vs reward"), "-");
    // Naturalness 1, 2, 3, 4 against the reward: rho = 1.
    assert!(cell(c, "naturalness", "rho vs reward").starts_with("1.000 ["));
    let a = r.reliability.as_ref().expect("two raters");
    assert_eq!(cell(a, "empathy", "dialogues with 2+ raters"), "4");
    assert_eq!(cell(a, "empathy", "raters"), "2");
    assert!(
        cell(a, "empathy", "alpha (interval)").starts_with("0.816 ["),
        "{a:?}"
    );
    assert_eq!(cell(a, "relevance", "alpha (interval)"), "-");
    assert!(cell(a, "naturalness", "alpha (interval)").starts_with("1.000"));
    assert!(r.preference.is_none());
    assert!(r.arms.is_none(), "one log, one arm");
    let md = r.to_markdown();
    assert!(
        md.starts_with("4 of 4 dialogues rated by 2 raters: alice (4), bob (4)"),
        "{md}"
    );
    assert!(md.contains("Krippendorff's alpha, interval metric"));
}

#[test]
fn pairs_count_preferences_of_people_and_reward() {
    let (t1, b1) = (rec("x", 0.9, 90), rec("x", 0.1, 10));
    let (b2, t2) = (rec("y", 0.5, 50), rec("y", 0.3, 30));
    let key = vec![
        key_row("p1", "A", TRAINED, &t1, 2),
        key_row("p1", "B", BASE, &b1, 3),
        key_row("p2", "A", BASE, &b2, 4),
        key_row("p2", "B", TRAINED, &t2, 5),
    ];
    // p1: the trained side rated higher, and its reward is higher: the same preference.
    // p2: a tie on empathy (no preference to compare); the base rated higher on relevance
    // while the base's reward is higher: the same preference again.
    let ratings = vec![
        rating(2, "alice", "p1", "A", [5, 4, 3]),
        rating(3, "alice", "p1", "B", [2, 2, 3]),
        rating(4, "alice", "p2", "A", [4, 5, 3]),
        rating(5, "alice", "p2", "B", [4, 1, 3]),
    ];
    let eps = vec![t1, b1, b2, t2];
    let r = agreement(Path::new("k.csv"), &key, &ratings, &eps, &opts()).unwrap();
    assert!(r.reliability.is_none(), "one rater");
    let p = r.preference.as_ref().expect("pairs");
    assert_eq!(cell(p, "empathy", "pairs"), "2");
    assert_eq!(cell(p, "empathy", "people prefer trained"), "1/2 (50%)");
    assert_eq!(cell(p, "empathy", "people: tie"), "1/2 (50%)");
    assert_eq!(cell(p, "empathy", "people prefer base"), "0/2 (0%)");
    assert_eq!(cell(p, "empathy", "reward prefers trained"), "1/2 (50%)");
    assert_eq!(cell(p, "empathy", "same preference"), "1/1 (100%)");
    assert_eq!(cell(p, "relevance", "same preference"), "2/2 (100%)");
    assert_eq!(cell(p, "naturalness", "people: tie"), "2/2 (100%)");
    assert_eq!(cell(p, "naturalness", "same preference"), "-");
    // By arm: trained empathy 5 and 4, base 2 and 4; rewards 0.9, 0.3 and 0.1, 0.5.
    let arms = r.arms.as_ref().expect("two arms");
    assert_eq!(cell(arms, TRAINED, "empathy"), "4.50");
    assert_eq!(cell(arms, BASE, "empathy"), "3.00");
    assert_eq!(cell(arms, TRAINED, "mean reward"), "0.60");
    assert_eq!(cell(arms, BASE, "mean reward"), "0.30");
    assert_eq!(cell(arms, BASE, "dialogues rated"), "2");
    let no_side = [rating(4, "bob", "p1", "", [1, 1, 1])];
    let e = agreement(Path::new("k.csv"), &key, &no_side, &eps, &opts()).unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("line 4, field side: item p1 has an empty side (it is an A/B pair"),
        "{e}"
    );
}

#[test]
fn join_errors_name_the_file_line_and_field() {
    let (eps, key) = single();
    let run = |ratings: Vec<Rating>, eps: &[EpisodeRecord]| {
        agreement(Path::new("k.csv"), &key, &ratings, eps, &opts())
            .unwrap_err()
            .to_string()
    };
    let e = run(vec![rating(7, "alice", "nope", "", [1, 1, 1])], &eps);
    assert!(
        e.starts_with("alice.csv: line 7, field item: item nope is not in the key k.csv"),
        "{e}"
    );
    let e = run(vec![rating(3, "alice", "i1", "B", [1, 1, 1])], &eps);
    assert!(
        e.starts_with("alice.csv: line 3, field side: item i1 has no side B"),
        "{e}"
    );
    let twice = vec![
        rating(2, "alice", "i1", "", [1, 1, 1]),
        rating(9, "alice", "i1", "", [2, 2, 2]),
    ];
    let e = run(twice, &eps);
    assert!(
        e.contains("line 9, field rater: alice rated item i1 again (first at alice.csv line 2)"),
        "{e}"
    );
    let e = run(vec![], &eps[1..]);
    assert!(
        e.starts_with("k.csv: line 2, field episode: episode"),
        "{e}"
    );
    assert!(e.contains("is in none of the logs given"), "{e}");
}
