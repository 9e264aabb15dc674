//! Episode JSONL under faults: writers appending to one file never interleave within a line, even
//! for lines far over a buffer's size; appending after a crash sets the cut line aside; readers
//! name every bad line and keep every good one.

use std::path::Path;

use empathy_gym::environment::episode::{read_episodes, EpisodeRecord, EpisodeWriter, Turn};
use empathy_gym::environment::profile::Difficulty;
use empathy_gym::environment::reward::RewardMode;

use crate::common::{play, scripted, temp_dir, test_profiles};

fn records(n: usize) -> Vec<EpisodeRecord> {
    let ids = test_profiles(n);
    let mut policy = scripted(&["That sounds hard. What happened?"]);
    play(
        &ids,
        Difficulty::Moderate,
        RewardMode::Behavior,
        5,
        &mut policy,
    )
}

/// `rec` with a thinking trace of `bytes` bytes on its first reply, tagged `tag`.
fn big(rec: &EpisodeRecord, bytes: usize, tag: usize) -> EpisodeRecord {
    let mut r = rec.clone();
    r.sample = tag as u64;
    if let Some(Turn::Assistant { think, .. }) = r.turns.get_mut(1) {
        *think = Some("x".repeat(bytes));
    }
    r
}

fn write_all(path: &Path, recs: &[EpisodeRecord]) {
    let mut w = EpisodeWriter::create(path).unwrap();
    for r in recs {
        w.write(r).unwrap();
    }
}

#[test]
fn writers_appending_to_one_file_never_split_a_long_line() {
    let dir = temp_dir();
    let path = dir.path().join("shared.jsonl");
    let base = records(1).remove(0);
    EpisodeWriter::create(&path).unwrap();
    let (threads, each) = (4usize, 150usize);
    // Opened before anyone writes: opening for append sets a cut last line aside, which is only
    // right when no other writer is mid-line.
    let writers: Vec<EpisodeWriter> = (0..threads)
        .map(|_| EpisodeWriter::append(&path).unwrap())
        .collect();
    std::thread::scope(|s| {
        for (t, mut w) in writers.into_iter().enumerate() {
            let base = &base;
            s.spawn(move || {
                for i in 0..each {
                    // 20 KiB: over the 8 KiB a buffered writer flushes in more than one call.
                    w.write(&big(base, 20 * 1024, t * each + i)).unwrap();
                }
            });
        }
    });
    let log = read_episodes(&path).unwrap();
    assert!(
        log.errors.is_empty(),
        "{:?}",
        log.errors.first().map(ToString::to_string)
    );
    assert_eq!(log.records.len(), threads * each);
}

#[test]
fn appending_after_a_crash_sets_the_cut_line_aside() {
    let dir = temp_dir();
    let path = dir.path().join("a.jsonl");
    let recs = records(3);
    write_all(&path, &recs);
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = &text[..text.len() - 40];
    std::fs::write(&path, cut).unwrap();
    let mut w = EpisodeWriter::append(&path).unwrap();
    w.write(&recs[0]).unwrap();
    drop(w);
    let log = read_episodes(&path).unwrap();
    assert!(
        log.errors.is_empty(),
        "{:?}",
        log.errors.first().map(ToString::to_string)
    );
    assert_eq!(
        log.records.len(),
        3,
        "two complete lines kept and one appended"
    );
    let aside = std::fs::read_to_string(dir.path().join("a.jsonl.cut")).unwrap();
    let last_start = cut.rfind('\n').unwrap() + 1;
    assert_eq!(
        aside,
        format!("{}\n", &cut[last_start..]),
        "the cut line is kept, not lost"
    );
}

#[test]
fn readers_name_every_bad_line_and_keep_the_rest() {
    let dir = temp_dir();
    let path = dir.path().join("a.jsonl");
    let recs = records(3);
    write_all(&path, &recs);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mangled = format!(
        "{}\nnot json at all\n{}\n{{\"schema\": 7}}\n{}\n",
        lines[0], lines[1], lines[2]
    );
    std::fs::write(&path, mangled).unwrap();
    let log = read_episodes(&path).unwrap();
    assert_eq!(
        log.records.len(),
        3,
        "every good line after a bad one is read"
    );
    let lines_named: Vec<String> = log.errors.iter().map(ToString::to_string).collect();
    assert_eq!(lines_named.len(), 2, "{lines_named:?}");
    assert!(
        lines_named[0].contains("line 2") && lines_named[1].contains("line 4"),
        "{lines_named:?}"
    );
}
