//! `replay html`: one self-contained HTML page (no network, no external files) over episode logs:
//! the list of episodes with filters (profile, difficulty, reward mode, end, step range), each
//! transcript beside its emotion curve with the appraiser's reasons on hover, and a run overview
//! (mean reward and final emotion by step, ends by step).
//!
//! The page is `report_page.html` (markup, style and script) with the episodes embedded as JSON;
//! everything is drawn in the browser, so a 10,000-episode log is one string copy here. Filters can
//! be preset in the address (`report.html#difficulty=hard&end=left&step=10-20&episode=3`), and the
//! page reports its state on `<body>` (`data-ready`, `data-matching`, `data-listed`, `data-errors`)
//! so that a headless browser can test it.

use serde::Serialize;

use crate::environment::episode::{end_word, EpisodeRecord, Turn};

/// The page around the data; `__TITLE__` (every one) and `__DATA__` (once) are replaced.
const PAGE: &str = include_str!("report_page.html");

/// One episode as the page reads it.
#[derive(Serialize)]
struct PageEpisode<'a> {
    /// Which log (index into `logs`) and line it came from.
    log: usize,
    line: usize,
    run: &'a str,
    step: u64,
    group: u64,
    sample: u64,
    scenario: &'a str,
    persona: &'a str,
    difficulty: String,
    reward_mode: String,
    end: &'static str,
    reward: Option<f64>,
    turns: Vec<PageTurn<'a>>,
}

/// A turn: the user's with emotion, change and the appraiser's reasons; the policy's with text.
#[derive(Serialize)]
struct PageTurn<'a> {
    user: bool,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    emotion: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<i32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasons: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<&'a str>,
}

#[derive(Serialize)]
struct PageData<'a> {
    logs: &'a [String],
    episodes: Vec<PageEpisode<'a>>,
}

fn page_turn(t: &Turn) -> PageTurn<'_> {
    match t {
        Turn::User {
            text,
            emotion,
            delta,
            appraisal,
        } => PageTurn {
            user: true,
            text,
            emotion: Some(*emotion),
            delta: *delta,
            reasons: appraisal
                .as_ref()
                .map(|a| a.reasons.iter().map(String::as_str).collect())
                .unwrap_or_default(),
            think: None,
        },
        Turn::Assistant { text, think } => PageTurn {
            user: false,
            text,
            emotion: None,
            delta: None,
            reasons: Vec::new(),
            think: think.as_deref(),
        },
    }
}

/// The page for `episodes`, each with its log index (into `logs`, the names shown) and line.
pub fn render_html(
    title: &str,
    logs: &[String],
    episodes: &[(usize, usize, EpisodeRecord)],
) -> String {
    let data = PageData {
        logs,
        episodes: episodes
            .iter()
            .map(|(log, line, r)| PageEpisode {
                log: *log,
                line: *line,
                run: &r.run,
                step: r.step,
                group: r.group,
                sample: r.sample,
                scenario: &r.profile.scenario,
                persona: &r.profile.persona,
                difficulty: r.profile.difficulty.to_string(),
                reward_mode: r.reward_mode.to_string(),
                end: end_word(r.end),
                reward: r.reward,
                turns: r.turns.iter().map(page_turn).collect(),
            })
            .collect(),
    };
    // Serializing plain structs of strings and numbers cannot fail.
    let json = serde_json::to_string(&data).expect("episodes as JSON");
    PAGE.replace("__TITLE__", &html_escape(title))
        .replacen("__DATA__", &script_safe(&json), 1)
}

/// JSON that can sit inside `<script>`: `<` only occurs in strings, where `\u003c` means the same.
pub(crate) fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

/// Text for HTML element content.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_close_the_script_and_title_is_escaped() {
        let rec: EpisodeRecord = serde_json::from_value(serde_json::json!({
            "schema": "empathy-gym/episode/v1",
            "profile": {"scenario": "s", "persona": "p", "difficulty": "hard"},
            "simulator": {"seed": 1},
            "turns": [{"role": "user", "text": "</script><b>hi</b>", "emotion": 40}],
            "end": "max_turns", "reward": 0.4,
        }))
        .unwrap();
        let page = render_html("a<b", &["log.jsonl".into()], &[(0, 1, rec)]);
        assert!(!page.contains("</script><b>"));
        assert!(page.contains("\\u003c/script>\\u003cb>hi"));
        assert!(page.contains("<title>a&lt;b") && page.contains("<h1>a&lt;b</h1>"));
        assert!(page.contains("\"difficulty\":\"hard\"") && page.contains("\"end\":\"max_turns\""));
        assert!(!page.contains("__DATA__") && !page.contains("__TITLE__"));
    }
}
