//! The rating page: `rate_page.html` (markup, style and script) with the study embedded as JSON.
//! It carries only what a rater may see: the study id, the item ids and each dialogue's text. No
//! reward, emotion, profile, policy, log name or side assignment is in it; those stay in the key.
//!
//! The page keeps the rater's progress in the browser's `localStorage` under the study id, and its
//! export button downloads the ratings as CSV (and shows them in `<pre id="export">`). Its address
//! may carry `#rater=NAME&keys=1,2,Enter&export`, which types the keys through the page's own key
//! handler and presses export: how a headless browser tests it, and how a lab can check a page
//! before handing it out.

use serde::Serialize;

use super::study::{Study, SCALES};
use crate::replay::html::{html_escape, script_safe};

/// The page around the data; `__TITLE__` (every one) and `__DATA__` (once) are replaced.
const PAGE: &str = include_str!("rate_page.html");

#[derive(Serialize)]
struct PageData<'a> {
    study: &'a str,
    scales: [&'static str; 3],
    items: Vec<PageItem<'a>>,
}

#[derive(Serialize)]
struct PageItem<'a> {
    id: &'a str,
    sides: Vec<PageSide<'a>>,
}

#[derive(Serialize)]
struct PageSide<'a> {
    side: &'a str,
    turns: Vec<PageTurn<'a>>,
}

#[derive(Serialize)]
struct PageTurn<'a> {
    user: bool,
    text: &'a str,
}

/// The page of `study` under `title`.
pub fn render_rate_page(title: &str, study: &Study) -> String {
    let data = PageData {
        study: &study.id,
        scales: SCALES,
        items: study
            .items
            .iter()
            .map(|item| PageItem {
                id: &item.id,
                sides: item
                    .sides
                    .iter()
                    .map(|s| PageSide {
                        side: &s.side,
                        turns: s
                            .turns
                            .iter()
                            .map(|(user, text)| PageTurn { user: *user, text })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    };
    // Serializing plain structs of strings cannot fail.
    let json = serde_json::to_string(&data).expect("study as JSON");
    PAGE.replace("__TITLE__", &html_escape(title))
        .replacen("__DATA__", &script_safe(&json), 1)
}

#[cfg(test)]
mod tests {
    use super::super::study::{LoggedEpisode, StudyOptions};
    use super::*;

    #[test]
    fn the_page_is_blind_and_cannot_close_its_script() {
        let logged = |log: &str, scenario: &str, reward: f64| LoggedEpisode {
            log: log.into(),
            line: 1,
            record: serde_json::from_value(serde_json::json!({
                "schema": "empathy-gym/episode/v1",
                "run": "grpo-run-7",
                "profile": {"scenario": scenario, "persona": "stoic-persona", "difficulty": "hard"},
                "simulator": {"seed": 1},
                "policy": {"model": "policy-model-x", "checkpoint": null},
                "turns": [
                    {"role": "user", "text": "</script><b>hi</b>", "emotion": 43},
                    {"role": "assistant", "text": "I hear you.", "think": "hidden-thought"},
                    {"role": "user", "text": "thanks", "emotion": 57, "delta": 14},
                ],
                "end": "max_turns", "reward": reward,
            }))
            .unwrap(),
        };
        let base = [logged("base-log.jsonl", "job-loss", 0.4321)];
        let trained = [logged("trained-log.jsonl", "job-loss", 0.8765)];
        let study = Study::paired(&base, &trained, StudyOptions::default());
        let page = render_rate_page("a<b", &study);
        assert!(!page.contains("</script><b>"));
        assert!(page.contains("\\u003c/script>\\u003cb>hi"));
        assert!(page.contains("<title>a&lt;b"));
        assert!(page.contains("I hear you.") && page.contains(&study.items[0].id));
        for secret in [
            "0.4321",
            "0.8765",
            "\"43\"",
            ":43",
            ":57",
            "job-loss",
            "stoic-persona",
            "grpo-run-7",
            "policy-model-x",
            "hidden-thought",
            "base-log",
            "trained-log",
            "\"trained\"",
            "\"base\"",
            "\"emotion\"",
            "\"reward\"",
            &study.items[0].sides[0].episode,
        ] {
            assert!(!page.contains(secret), "the page shows `{secret}`");
        }
        assert!(!page.contains("__DATA__") && !page.contains("__TITLE__"));
    }
}
