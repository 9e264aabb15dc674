//! Where judged conversations go: `judged.jsonl` (one conversation per line, everything kept),
//! `replies.csv` (one row per reply: the move scores, the named components, the emotion change) and
//! `dialogues.csv` (one row per conversation: the derived need and feelings, the trajectory, the
//! labels). Rows are written and flushed batch by batch, so an error in the input keeps every row
//! judged before it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::score::Judged;
use crate::environment::sim::Move;
use crate::error::{Error, Result};

/// The three output files of one `judge` run.
pub struct JudgeWriter {
    dir: PathBuf,
    jsonl: BufWriter<File>,
    replies: csv::Writer<File>,
    dialogues: csv::Writer<File>,
    /// Conversations written.
    pub written: usize,
}

fn create(dir: &Path, name: &str) -> Result<File> {
    let path = dir.join(name);
    File::create(&path).map_err(|e| Error::io(path, e))
}

impl JudgeWriter {
    /// Creates `dir` and the three files in it.
    pub fn create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut replies = csv::Writer::from_writer(create(dir, "replies.csv")?);
        let mut head: Vec<String> = ["id", "turn", "delta", "raw", "emotion", "warmth"]
            .map(String::from)
            .to_vec();
        head.extend(Move::ALL.iter().map(|m| m.as_str().to_string()));
        head.extend(["components", "reasons"].map(String::from));
        replies.write_record(&head).map_err(|e| csv_error(dir, e))?;
        let mut dialogues = csv::Writer::from_writer(create(dir, "dialogues.csv")?);
        dialogues
            .write_record([
                "id",
                "need",
                "need_because",
                "feelings",
                "replies",
                "trajectory",
                "final_emotion",
                "would_end",
                "labels",
            ])
            .map_err(|e| csv_error(dir, e))?;
        Ok(JudgeWriter {
            dir: dir.to_path_buf(),
            jsonl: BufWriter::new(create(dir, "judged.jsonl")?),
            replies,
            dialogues,
            written: 0,
        })
    }

    /// Appends judged conversations to all three files and flushes them.
    pub fn write(&mut self, judged: &[Judged]) -> Result<()> {
        let path = self.dir.join("judged.jsonl");
        for j in judged {
            let line = serde_json::to_string(j).map_err(|e| Error::Other(e.to_string()))?;
            writeln!(self.jsonl, "{line}").map_err(|e| Error::io(&path, e))?;
            for r in &j.replies {
                let mut row = vec![
                    j.id.clone(),
                    r.turn.to_string(),
                    r.delta.to_string(),
                    format!("{:.3}", r.raw),
                    r.emotion.to_string(),
                    format!("{:.3}", r.warmth),
                ];
                row.extend(
                    Move::ALL
                        .iter()
                        .map(|m| format!("{:.3}", r.moves.get(m).copied().unwrap_or(0.0))),
                );
                row.push(pairs(r.components.iter().map(|(k, v)| (k.as_str(), *v))));
                row.push(r.reasons.join("; "));
                self.replies
                    .write_record(&row)
                    .map_err(|e| csv_error(&self.dir, e))?;
            }
            let d = &j.derived;
            let trajectory: Vec<String> = j.trajectory.iter().map(u8::to_string).collect();
            self.dialogues
                .write_record([
                    j.id.as_str(),
                    d.need.as_str(),
                    d.need_because.as_str(),
                    &d.feelings.join(" "),
                    &j.replies.len().to_string(),
                    &trajectory.join(" "),
                    &j.final_emotion().to_string(),
                    j.would_end.as_str(),
                    &pairs(j.labels.iter().map(|(k, v)| (k.as_str(), *v))),
                ])
                .map_err(|e| csv_error(&self.dir, e))?;
        }
        self.written += judged.len();
        self.jsonl.flush().map_err(|e| Error::io(&path, e))?;
        self.replies
            .flush()
            .map_err(|e| Error::io(self.dir.join("replies.csv"), e))?;
        self.dialogues
            .flush()
            .map_err(|e| Error::io(self.dir.join("dialogues.csv"), e))
    }
}

/// `name=value; name=value`, values with up to 3 decimals.
fn pairs<'a>(items: impl Iterator<Item = (&'a str, f64)>) -> String {
    items
        .map(|(k, v)| format!("{k}={}", (v * 1000.0).round() / 1000.0))
        .collect::<Vec<_>>()
        .join("; ")
}

fn csv_error(dir: &Path, e: csv::Error) -> Error {
    Error::Other(format!("{}: {e}", dir.display()))
}
