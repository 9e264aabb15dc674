//! Conversations from elsewhere, read into one shape: (seeker post, response) pairs from CSV
//! (EPITOME's columns), whole dialogues in ESConv's JSON shape, and the project's own episode logs.
//!
//! Readers hand out conversations one at a time; a bad row ends the reading with an error naming
//! the file, the line (or dialogue) and the field, after every good row before it was handed out.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::environment::episode::{EpisodeRecord, Turn};
use crate::error::{Error, Result};

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaker {
    /// The person seeking support (the simulated user's side).
    Seeker,
    /// The one replying (the policy's side).
    Supporter,
}

/// One conversation to judge.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// Where it came from: `sp_id/rp_id`, a dialogue index, or an episode's run/step/group/sample.
    pub id: String,
    /// The messages in order; consecutive messages of one speaker are joined.
    pub messages: Vec<(Speaker, String)>,
    /// Labels that came with it: EPITOME's `level`, ESConv's survey scores, a log's reward.
    pub labels: BTreeMap<String, f64>,
}

impl Conversation {
    fn push(&mut self, who: Speaker, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        match self.messages.last_mut() {
            Some((last, joined)) if *last == who => {
                joined.push(' ');
                joined.push_str(text);
            }
            _ => self.messages.push((who, text.to_string())),
        }
    }

    /// The seeker's messages.
    pub fn seeker(&self) -> Vec<&str> {
        self.messages
            .iter()
            .filter(|(w, _)| *w == Speaker::Seeker)
            .map(|(_, t)| t.as_str())
            .collect()
    }
}

/// The input formats `judge` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// CSV with `seeker_post` and `response_post` columns (EPITOME's); other columns are labels.
    Pairs,
    /// ESConv's shape: a JSON array, or JSONL, of `{dialog: [{speaker, content}], survey_score?}`.
    Esconv,
    /// The project's episode logs (JSONL, schema empathy-gym/episode/v1).
    Log,
}

impl Format {
    /// The word on the command line and in the output.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Pairs => "pairs",
            Format::Esconv => "esconv",
            Format::Log => "log",
        }
    }

    /// Guessed from the extension, and for `.jsonl` from the first line's `schema` field.
    pub fn guess(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => Ok(Format::Pairs),
            Some("json") => Ok(Format::Esconv),
            Some("jsonl") => {
                let file = File::open(path).map_err(|e| Error::io(path, e))?;
                let first = BufReader::new(file)
                    .lines()
                    .map_while(std::io::Result::ok)
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or_default();
                Ok(if first.contains("\"schema\"") {
                    Format::Log
                } else {
                    Format::Esconv
                })
            }
            _ => Err(Error::input(
                path,
                "file name",
                "cannot tell the format from the extension: pass --format pairs|esconv|log",
            )),
        }
    }
}

/// Reads every conversation of `path`, handing each to `each`; stops at the first bad one with an
/// error that names where it is.
pub fn read(
    path: &Path,
    format: Format,
    each: &mut dyn FnMut(Conversation) -> Result<()>,
) -> Result<()> {
    match format {
        Format::Pairs => read_pairs(path, each),
        Format::Esconv => read_esconv(path, each),
        Format::Log => read_log(path, each),
    }
}

fn read_pairs(path: &Path, each: &mut dyn FnMut(Conversation) -> Result<()>) -> Result<()> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_path(path)
        .map_err(|e| Error::input(path, "line 1", format!("not readable as CSV: {e}")))?;
    let headers = reader
        .headers()
        .map_err(|e| Error::input(path, "line 1", format!("no header row: {e}")))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(post), Some(response)) = (column("seeker_post"), column("response_post")) else {
        return Err(Error::input(
            path,
            "line 1",
            "needs the columns seeker_post and response_post (EPITOME's names)",
        ));
    };
    let (sp, rp) = (column("sp_id"), column("rp_id"));
    for (i, row) in reader.records().enumerate() {
        let line = i + 2;
        let row = row.map_err(|e| Error::input(path, format!("line {line}"), e.to_string()))?;
        let field = |c: usize| row.get(c).unwrap_or("").trim();
        let id = match (sp, rp) {
            (Some(s), Some(r)) => format!("{}/{}", field(s), field(r)),
            (Some(s), None) => field(s).to_string(),
            _ => format!("line {line}"),
        };
        for (c, name) in [(post, "seeker_post"), (response, "response_post")] {
            if field(c).is_empty() {
                return Err(Error::input(
                    path,
                    format!("line {line}, {name}"),
                    "empty: every row needs a post and a response",
                ));
            }
        }
        let mut labels = BTreeMap::new();
        for (c, name) in headers.iter().enumerate() {
            let skip = [Some(post), Some(response), sp, rp].contains(&Some(c));
            if skip || field(c).is_empty() {
                continue;
            }
            if let Ok(v) = field(c).parse::<f64>() {
                labels.insert(name.trim().to_string(), v);
            }
        }
        let mut conv = Conversation {
            id,
            messages: Vec::new(),
            labels,
        };
        conv.push(Speaker::Seeker, field(post));
        conv.push(Speaker::Supporter, field(response));
        each(conv)?;
    }
    Ok(())
}

#[derive(Deserialize)]
struct EsconvTurn {
    speaker: Option<String>,
    content: Option<String>,
}

/// One ESConv dialogue; `where_` names it in errors (`dialogue 3` or `line 3`).
fn esconv_dialogue(path: &Path, where_: &str, value: Value) -> Result<Conversation> {
    let bad = |field: &str, msg: &str| Error::input(path, format!("{where_}, {field}"), msg);
    let Value::Object(obj) = value else {
        return Err(bad("", "not a JSON object with a `dialog` list"));
    };
    let turns = obj
        .get("dialog")
        .ok_or_else(|| bad("dialog", "missing: ESConv's list of {speaker, content}"))?;
    let turns: Vec<EsconvTurn> = serde_json::from_value(turns.clone()).map_err(|e| {
        bad(
            "dialog",
            &format!("not a list of {{speaker, content}}: {e}"),
        )
    })?;
    let mut conv = Conversation {
        id: where_.to_string(),
        messages: Vec::new(),
        labels: BTreeMap::new(),
    };
    for (k, t) in turns.iter().enumerate() {
        let who = match t.speaker.as_deref().map(str::to_ascii_lowercase).as_deref() {
            // ESConv's crowd-sourcing platform also names them `speaker` and `listener`.
            Some("seeker" | "usr" | "user" | "client" | "speaker") => Speaker::Seeker,
            Some("supporter" | "sys" | "system" | "assistant" | "helper" | "listener") => {
                Speaker::Supporter
            }
            other => {
                return Err(bad(
                    &format!("dialog[{k}].speaker"),
                    &format!(
                        "{}: use seeker (or usr, user, speaker) and supporter (or sys, assistant, listener)",
                        other.map_or("missing".to_string(), |o| format!("`{o}` is not a speaker"))
                    ),
                ))
            }
        };
        let Some(text) = &t.content else {
            return Err(bad(
                &format!("dialog[{k}].content"),
                "missing: the message text",
            ));
        };
        conv.push(who, text);
    }
    if !conv.messages.iter().any(|(w, _)| *w == Speaker::Supporter) {
        return Err(bad("dialog", "has no supporter message to judge"));
    }
    // ESConv's survey: the seeker's emotion intensity before and after, and their ratings.
    if let Some(Value::Object(survey)) = obj.get("survey_score") {
        for (who, scores) in survey {
            let Value::Object(scores) = scores else {
                continue;
            };
            for (name, v) in scores {
                let n = match v {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                };
                if let Some(n) = n {
                    conv.labels.insert(format!("{who}.{name}"), n);
                }
            }
        }
    }
    Ok(conv)
}

fn read_esconv(path: &Path, each: &mut dyn FnMut(Conversation) -> Result<()>) -> Result<()> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    if text.trim_start().starts_with('[') {
        let all: Vec<Value> = serde_json::from_str(&text).map_err(|e| {
            Error::input(path, format!("line {}", e.line()), format!("not JSON: {e}"))
        })?;
        for (i, v) in all.into_iter().enumerate() {
            each(esconv_dialogue(path, &format!("dialogue {i}"), v)?)?;
        }
        return Ok(());
    }
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", i + 1);
        let v: Value = serde_json::from_str(line)
            .map_err(|e| Error::input(path, at.as_str(), format!("not JSON: {e}")))?;
        each(esconv_dialogue(path, &at, v)?)?;
    }
    Ok(())
}

fn read_log(path: &Path, each: &mut dyn FnMut(Conversation) -> Result<()>) -> Result<()> {
    let log = crate::environment::episode::read_episodes(path)?;
    for (line, r) in &log.records {
        each(from_record(path, *line, r))?;
    }
    match log.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// An episode as a conversation; its reward and final emotion become labels.
fn from_record(path: &Path, line: usize, r: &EpisodeRecord) -> Conversation {
    let mut conv = Conversation {
        id: format!(
            "{}:{} {} step {} group {} sample {}",
            file_name(path),
            line,
            r.run,
            r.step,
            r.group,
            r.sample
        ),
        messages: Vec::new(),
        labels: BTreeMap::new(),
    };
    for t in &r.turns {
        match t {
            Turn::User { text, .. } => conv.push(Speaker::Seeker, text),
            Turn::Assistant { text, .. } => conv.push(Speaker::Supporter, text),
        }
    }
    if let Some(reward) = r.reward {
        conv.labels.insert("logged.reward".into(), reward);
    }
    conv.labels
        .insert("logged.final_emotion".into(), f64::from(r.final_emotion()));
    conv
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
