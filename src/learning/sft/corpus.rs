//! The human support dialogues SFT learns from, read from the user's own copies (never
//! committed) as `judge` reads them (`judge::input`): ESConv's JSON shape and (post, response)
//! pairs, and EPITOME's dev part (`judge::epitome`; its test part is never trained on).
//!
//! A dialogue is cut into windows that each open with the seeker's message and hold at most
//! `sft.turns_per_example` supporter turns, so every supporter turn is a target exactly once.
//! Supporter messages before the seeker's first one (greetings into an empty room) are left out:
//! the environment's user always speaks first. Whole dialogues are held out for validation by a
//! hash of their id and the run's seed, so no dialogue is in both parts.

use std::path::Path;

use crate::error::{Error, Result};
use crate::judge::epitome::{self, Part};
use crate::judge::input::{read, Conversation, Format, Speaker};
use crate::learning::train::config_file::SftSection;
use crate::learning::train::trainer::streams;
use crate::seed::{derive, fnv1a64};

/// One training example: a window of a dialogue.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    /// The dialogue it came from (`<file>#<id>`, `epitome:<sp_id>/<rp_id>`).
    pub dialogue: String,
    /// The messages, opening with the seeker's and ending with a supporter turn.
    pub messages: Vec<(Speaker, String)>,
}

impl Example {
    /// Supporter turns (the targets).
    pub fn turns(&self) -> usize {
        self.messages
            .iter()
            .filter(|(w, _)| *w == Speaker::Supporter)
            .count()
    }
}

/// The examples of every source, split into training and validation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Corpus {
    pub train: Vec<Example>,
    pub validation: Vec<Example>,
    /// Per source: its name and the dialogues read from it.
    pub sources: Vec<(String, usize)>,
}

/// Reads `sft.dialogues` and `sft.epitome`; `config` names the config file in errors.
pub fn read_corpus(sft: &SftSection, seed: u64, config: &Path) -> Result<Corpus> {
    if sft.dialogues.is_empty() && sft.epitome.is_none() {
        return Err(Error::input(
            config,
            "sft.dialogues",
            "no data to learn from: list ESConv-shaped JSON files under sft.dialogues, or set \
             sft.epitome to EPITOME's dataset folder",
        ));
    }
    let mut dialogues: Vec<Conversation> = Vec::new();
    let mut sources = Vec::new();
    for path in &sft.dialogues {
        let before = dialogues.len();
        read_file(path, &mut dialogues)?;
        sources.push((path.display().to_string(), dialogues.len() - before));
    }
    if let Some(dir) = &sft.epitome {
        let before = dialogues.len();
        for item in epitome::load(dir)? {
            if item.part() == Part::Dev && item.total() >= sft.epitome_min_total {
                let mut c = item.conversation();
                // Responses to one post are held out together.
                c.id = format!("epitome:{}", item.sp_id);
                dialogues.push(c);
            }
        }
        sources.push((
            format!("{} (EPITOME dev)", dir.display()),
            dialogues.len() - before,
        ));
    }
    let mut corpus = Corpus {
        sources,
        ..Corpus::default()
    };
    for c in &dialogues {
        let part = if held_out(&c.id, seed, sft.validation_share) {
            &mut corpus.validation
        } else {
            &mut corpus.train
        };
        part.extend(windows(c, sft.turns_per_example));
    }
    if corpus.train.is_empty() {
        return Err(Error::input(
            config,
            "sft",
            "the dialogues hold no supporter turn after a seeker's message to train on",
        ));
    }
    Ok(corpus)
}

/// The conversations of one file, ids prefixed with the file's name. The name and not the full
/// path, so the validation split of a seed stays the same wherever the data is kept.
fn read_file(path: &Path, out: &mut Vec<Conversation>) -> Result<()> {
    let format = Format::guess(path)?;
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    read(path, format, &mut |mut c: Conversation| {
        c.id = format!("{name}#{}", c.id);
        out.push(c);
        Ok(())
    })
}

/// Whether dialogue `id` is in the validation part: a uniform draw from (seed, id) below `share`.
pub fn held_out(id: &str, seed: u64, share: f64) -> bool {
    let h = derive(derive(seed, streams::SFT_SPLIT), fnv1a64(id.as_bytes()));
    ((h >> 11) as f64 / (1u64 << 53) as f64) < share
}

/// `conv` cut into windows of at most `turns` supporter turns, each opening with the seeker.
pub fn windows(conv: &Conversation, turns: usize) -> Vec<Example> {
    let start = conv
        .messages
        .iter()
        .position(|(w, _)| *w == Speaker::Seeker);
    let Some(start) = start else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut current: Vec<(Speaker, String)> = Vec::new();
    let mut in_window = 0;
    for m in &conv.messages[start..] {
        if m.0 == Speaker::Seeker && in_window == turns {
            out.push(current);
            current = Vec::new();
            in_window = 0;
        }
        if m.0 == Speaker::Supporter {
            in_window += 1;
        }
        current.push(m.clone());
    }
    out.push(current);
    out.into_iter()
        .filter_map(|mut messages| {
            // A window ends with its last supporter turn; a seeker's last words are no target.
            while messages.last().is_some_and(|(w, _)| *w == Speaker::Seeker) {
                messages.pop();
            }
            (!messages.is_empty()).then(|| Example {
                dialogue: conv.id.clone(),
                messages,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Speaker::{Seeker as S, Supporter as A};

    fn conv(messages: &[(Speaker, &str)]) -> Conversation {
        Conversation {
            id: "d".into(),
            messages: messages.iter().map(|(w, t)| (*w, t.to_string())).collect(),
            labels: Default::default(),
        }
    }

    fn texts(e: &Example) -> Vec<&str> {
        e.messages.iter().map(|(_, t)| t.as_str()).collect()
    }

    #[test]
    fn windows_open_with_the_seeker_and_hold_each_supporter_turn_once() {
        let c = conv(&[
            (A, "hello"),
            (S, "s1"),
            (A, "a1"),
            (S, "s2"),
            (A, "a2"),
            (S, "s3"),
            (A, "a3"),
            (S, "bye"),
        ]);
        let w = windows(&c, 2);
        assert_eq!(w.len(), 2);
        assert_eq!(texts(&w[0]), ["s1", "a1", "s2", "a2"]);
        assert_eq!(texts(&w[1]), ["s3", "a3"]);
        assert_eq!(w.iter().map(Example::turns).sum::<usize>(), 3);
        assert!(w.iter().all(|e| e.dialogue == "d"));
        // One window holds the whole dialogue when it is short enough.
        assert_eq!(
            texts(&windows(&c, 3)[0]),
            ["s1", "a1", "s2", "a2", "s3", "a3"]
        );
    }

    #[test]
    fn a_dialogue_without_a_supporter_after_the_seeker_gives_nothing() {
        assert!(windows(&conv(&[(A, "hi")]), 3).is_empty());
        assert!(windows(&conv(&[(A, "hi"), (S, "help")]), 3).is_empty());
    }

    #[test]
    fn the_split_is_by_seed_and_id_near_the_share() {
        let ids: Vec<String> = (0..4000).map(|i| format!("dialogue {i}")).collect();
        let held = ids.iter().filter(|id| held_out(id, 7, 0.25)).count();
        assert!((900..1100).contains(&held), "{held} of 4000 at 0.25");
        assert!(ids.iter().all(|id| !held_out(id, 7, 0.0)));
        assert_eq!(held_out("x", 1, 0.5), held_out("x", 1, 0.5));
        let other = ids.iter().filter(|id| held_out(id, 8, 0.25)).count();
        let same = ids
            .iter()
            .filter(|id| held_out(id, 7, 0.25) && held_out(id, 8, 0.25))
            .count();
        assert!(same < held.min(other), "another seed draws another split");
    }

    #[test]
    fn the_corpus_reads_dialogue_files_and_only_epitomes_empathic_dev_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("d.json");
        std::fs::write(
            &json,
            r#"[{"dialog": [{"speaker": "seeker", "content": "I failed"},
                            {"speaker": "supporter", "content": "That hurts"}]}]"#,
        )
        .unwrap();
        // sp1 falls in EPITOME's test part, sp2 in its dev part (judge::epitome::Part).
        assert_eq!(Part::of("sp1"), Part::Test);
        assert_eq!(Part::of("sp2"), Part::Dev);
        let rows = [
            ("sp1", "r1", [2, 2, 2]),
            ("sp2", "r2", [0, 0, 0]),
            ("sp2", "r3", [1, 0, 0]),
        ];
        for (k, (_, name)) in epitome::FILES.iter().enumerate() {
            let mut w = csv::Writer::from_path(dir.path().join(name)).unwrap();
            w.write_record(["sp_id", "rp_id", "seeker_post", "response_post", "level"])
                .unwrap();
            for (sp, rp, levels) in rows {
                let level = levels[k].to_string();
                w.write_record([sp, rp, "my dog died", rp, level.as_str()])
                    .unwrap();
            }
            w.flush().unwrap();
        }
        let sft = SftSection {
            dialogues: vec![json.clone()],
            epitome: Some(dir.path().to_path_buf()),
            validation_share: 0.0,
            ..SftSection::default()
        };
        let c = read_corpus(&sft, 0, Path::new("c.yaml")).unwrap();
        let replies: Vec<&str> = c.train.iter().map(|e| e.messages[1].1.as_str()).collect();
        assert_eq!(replies, ["That hurts", "r3"]);
        assert_eq!(c.sources[0].1, 1);
        assert_eq!(c.sources[1].1, 1);
        // Named by file name alone, so the split does not depend on where the data is kept.
        assert_eq!(c.train[0].dialogue, "d.json#dialogue 0");
        let none = read_corpus(&SftSection::default(), 0, Path::new("c.yaml")).unwrap_err();
        assert!(none.to_string().contains("sft.dialogues"), "{none}");
    }
}
