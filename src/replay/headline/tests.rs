use std::collections::BTreeSet;
use std::path::Path;

use super::source::{aggregate, episode_stat, seed_words};
use super::*;

/// The repository's own catalog and presets, which the CSV rows' protocol reads.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One episode line: `emotions` from the opening on, ending `end`.
fn episode(policy: &str, seed: u64, emotions: &[u8], end: &str, rules: &str) -> String {
    let mut turns = vec![format!(
        r#"{{"role":"user","text":"hi","emotion":{}}}"#,
        emotions[0]
    )];
    for w in emotions.windows(2) {
        turns.push(r#"{"role":"assistant","text":"reply"}"#.into());
        turns.push(format!(
            r#"{{"role":"user","text":"ok","emotion":{},"delta":{}}}"#,
            w[1],
            i32::from(w[1]) - i32::from(w[0])
        ));
    }
    format!(
        r#"{{"schema":"empathy-gym/episode/v1","profile":{{"scenario":"job-loss-warehouse","persona":"maya","difficulty":"moderate"}},"simulator":{{"kind":"appraiser","version":"1","seed":{seed},"data":"{rules}"}},"policy":{{"model":"{policy}","checkpoint":null}},"turns":[{}],"end":"{end}"}}"#,
        turns.join(",")
    )
}

#[test]
fn a_block_is_replaced_between_its_markers_and_a_missing_one_is_named() {
    let doc = format!(
        "# Title\n{}\nold\n{}\nafter\n",
        begin_marker("t"),
        end_marker("t")
    );
    let new = replace_block(&doc, "t", "| a |\n").unwrap();
    assert_eq!(
        new,
        format!(
            "# Title\n{}\n| a |\n{}\nafter\n",
            begin_marker("t"),
            end_marker("t")
        )
    );
    assert_eq!(replace_block(&new, "t", "| a |\n").unwrap(), new);
    let err = replace_block("no markers", "t", "x").unwrap_err();
    assert!(err.contains(&begin_marker("t")), "{err}");
}

#[test]
fn aggregates_pick_name_range_and_quarters() {
    let fmt = |x: f64| format!("{x:.1}");
    let names = ["a".to_string(), "b".into(), "c".into(), "d".into()];
    let v = [1.0, 4.0, 2.0, 3.0];
    assert_eq!(
        aggregate(&v, Some(&names), Agg::Max, &fmt, "x").unwrap(),
        "4.0 (b)"
    );
    assert_eq!(
        aggregate(&v, Some(&names), Agg::Min, &fmt, "x").unwrap(),
        "1.0 (a)"
    );
    assert_eq!(
        aggregate(&v, None, Agg::Range, &fmt, "x").unwrap(),
        "1.0-4.0"
    );
    assert_eq!(aggregate(&v, None, Agg::Mean, &fmt, "x").unwrap(), "2.5");
    // Four rows: a quarter is one row; five rows: two (rounded up).
    assert_eq!(
        aggregate(&v, None, Agg::Quarters, &fmt, "x").unwrap(),
        "1.0 -> 3.0"
    );
    let five = [1.0, 2.0, 3.0, 4.0, 6.0];
    assert_eq!(
        aggregate(&five, None, Agg::Quarters, &fmt, "x").unwrap(),
        "1.5 -> 5.0"
    );
    assert!(aggregate(&v, None, Agg::One, &fmt, "x")
        .unwrap_err()
        .contains("4 items"));
    assert!(aggregate(&[], None, Agg::Max, &fmt, "x")
        .unwrap_err()
        .contains("nothing"));
}

#[test]
fn seeds_and_links_read_as_written() {
    assert_eq!(seed_words(&BTreeSet::from([7])), "seed 7");
    assert_eq!(
        seed_words(&BTreeSet::from([301, 302, 303])),
        "seeds 301-303"
    );
    assert_eq!(seed_words(&BTreeSet::from([1, 5])), "seeds 1, 5");
    assert_eq!(
        seed_words(&BTreeSet::from([1, 5, 9, 11, 20, 31, 99])),
        "7 seeds"
    );
    assert_eq!(
        link("results/a/b.csv", Path::new("")),
        "[results/a/b.csv](results/a/b.csv)"
    );
    assert_eq!(
        link("results/a/b.csv", Path::new("results")),
        "[results/a/b.csv](a/b.csv)"
    );
    assert_eq!(
        link("tests/x.jsonl", Path::new("results")),
        "[tests/x.jsonl](../tests/x.jsonl)"
    );
}

#[test]
fn episode_statistics_by_hand() {
    let lines = [
        episode("p", 1, &[40, 50, 45, 100], "resolved", "r"),
        episode("p", 2, &[40, 30, 5], "left", "r"),
    ];
    let records: Vec<EpisodeRecord> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let refs: Vec<&EpisodeRecord> = records.iter().collect();
    assert_eq!(episode_stat(&refs, Stat::MeanFinal), 52.5);
    // Five appraised replies, three of them lowering.
    assert_eq!(episode_stat(&refs, Stat::LoweringShare), 60.0);
    assert_eq!(episode_stat(&refs, Stat::Resolved), 1.0);
    assert_eq!(episode_stat(&refs, Stat::Left), 1.0);
}

/// A temporary results folder with a CSV, its config, an episode log and a spec over them.
struct Fixture {
    dir: tempfile::TempDir,
    today: String,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rows.csv"),
            "policy,side,split,difficulty,episodes,mean_final_emotion\n\
             listener,reference,test,moderate,74,41.4\n\
             echo,adversary,test,moderate,74,23.6\n\
             salad,adversary,test,moderate,74,3.0\n\
             listener,reference,test,easy,74,51.6\n",
        )
        .unwrap();
        let lines = [
            episode(
                "honest",
                301,
                &[40, 50, 60],
                "max_turns",
                "fnv1a64 00000000000000aa",
            ),
            episode(
                "honest",
                302,
                &[40, 45, 40],
                "max_turns",
                "fnv1a64 00000000000000aa",
            ),
        ];
        std::fs::write(dir.path().join("old.jsonl"), lines.join("\n") + "\n").unwrap();
        Fixture {
            dir,
            today: "fnv1a64 00000000000000bb".into(),
        }
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join(name), text).unwrap();
    }

    fn table(&self, spec: &str) -> Result<String> {
        let catalog = Catalog::load(repo()).unwrap();
        let presets = Presets::load(&repo().join("data/difficulty.yaml")).unwrap();
        let ctx = Context {
            root: self.dir.path(),
            catalog: &catalog,
            presets: &presets,
            today: &self.today,
        };
        let spec: TableSpec = serde_yaml::from_str(spec).unwrap();
        ctx.table(&spec)
    }
}

const CSV_SPEC: &str = r#"
name: t
doc: README.md
rows:
  - what: the listener against the scripts
    commit: 0123abcd
    source: {csv: rows.csv, config: config.yaml, config_keys: [env.knobs.max_turns, env.lr], note: on two cores, where: {split: test, difficulty: moderate}}
    values:
      - {label: listener, where: {policy: listener}, column: mean_final_emotion}
      - {label: best adversary, where: {side: adversary}, column: mean_final_emotion, agg: max, name: policy}
"#;

#[test]
fn a_csv_row_reads_its_numbers_protocol_and_rules_and_follows_the_file() {
    let f = Fixture::new();
    f.write(
        "config.yaml",
        &format!(
            "seed: 0\nenv:\n  knobs:\n    max_turns: 3\nrules: {}\n",
            f.today
        ),
    );
    let table = f.table(CSV_SPEC).unwrap();
    assert!(
        table.contains("listener 41.4; best adversary 23.6 (echo)"),
        "{table}"
    );
    assert!(
        table.contains(
            "test, moderate, start 40, up to 8 replies, 74 dialogues per policy, seed 0, \
             max_turns 3, lr unrecorded, on two cores"
        ),
        "{table}"
    );
    assert!(table.contains("`00000000` (today's)"), "{table}");
    assert!(
        table.contains("`0123abc`") && table.contains("[rows.csv](rows.csv)"),
        "{table}"
    );

    // A number changed in the file changes the table: the committed one would then be stale.
    let csv = std::fs::read_to_string(f.dir.path().join("rows.csv")).unwrap();
    f.write("rows.csv", &csv.replace("41.4", "44.0"));
    let after = f.table(CSV_SPEC).unwrap();
    assert!(
        after.contains("listener 44.0;") && after != table,
        "{after}"
    );

    // Numbers the rules cannot change show no version.
    let timing = CSV_SPEC.replace(
        "    commit: 0123abcd\n",
        "    commit: 0123abcd\n    rules_apply: false\n",
    );
    let t = f.table(&timing).unwrap();
    assert!(
        t.contains("| does not apply |") && !t.contains("re-score"),
        "{t}"
    );

    // Older rules without kept dialogues say so.
    f.write("config.yaml", "seed: 0\nrules: fnv1a64 00000000000000aa\n");
    let old = f.table(CSV_SPEC).unwrap();
    assert!(
        old.contains("its dialogues were not kept to re-score"),
        "{old}"
    );
}

const EPISODE_SPEC: &str = r#"
name: t
doc: results/README.md
rows:
  - what: honest listening
    commit: 0123abcd
    source: {episodes: old.jsonl}
    rescored: {old.jsonl: new.jsonl}
    values:
      - {label: "", stat: mean_final}
      - {label: lowering, stat: lowering_share}
      - {label: resolved, stat: resolved}
"#;

#[test]
fn an_episode_row_under_older_rules_shows_its_rescoring_or_says_there_is_none() {
    let f = Fixture::new();
    let err = f.table(EPISODE_SPEC).unwrap_err().to_string();
    assert!(err.contains("new.jsonl"), "{err}");
    // Re-scored, but under rules that are not today's either.
    let old = std::fs::read_to_string(f.dir.path().join("old.jsonl")).unwrap();
    f.write("new.jsonl", &old);
    let table = f.table(EPISODE_SPEC).unwrap();
    assert!(
        table.contains("50.0; lowering 25.0%; resolved 0 of 2; not re-scored under today's rules"),
        "{table}"
    );
    assert!(
        table.contains("test, moderate") || table.contains("train, moderate"),
        "{table}"
    );
    assert!(
        table.contains("2 dialogues on 1 profile, seeds 301-302"),
        "{table}"
    );
    f.write(
        "new.jsonl",
        &old.replace("00000000000000aa", "00000000000000bb")
            .replace("60", "70"),
    );
    let table = f.table(EPISODE_SPEC).unwrap();
    assert!(
        table.contains("under today's rules: 55.0; lowering 25.0%"),
        "{table}"
    );
    assert!(table.contains("[old.jsonl](../old.jsonl)"), "{table}");
    // Kept but with no re-scored file named: not re-scored, not "not kept".
    let unpaired = EPISODE_SPEC.replace("    rescored: {old.jsonl: new.jsonl}\n", "");
    let table = f.table(&unpaired).unwrap();
    assert!(
        table.contains("resolved 0 of 2; not re-scored under today's rules")
            && !table.contains("not kept"),
        "{table}"
    );
}
