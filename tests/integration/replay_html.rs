//! `replay html`: one self-contained page, loaded in headless Chromium (Debian's `chromium`,
//! installed by scripts/test-full.sh, which runs these tests): no script errors, every episode counted, the filters preset from
//! the address narrow the list as the records say, an episode shows its transcript and curve, and
//! a 10,000-episode log renders in under 10 s.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use empathy_gym::environment::episode::{read_episodes, End, EpisodeRecord, EpisodeWriter};
use empathy_gym::environment::profile::Difficulty;

use super::common::*;

/// The scripted listener these tests roll out, and its seed.
const REPLIES: &[&str] = &[
    "That sounds so hard. What has been the worst part?",
    "It makes sense you feel that way. How are you holding up?",
];
const SEED: u64 = 9;

/// Fails unless `html` loads nothing from outside itself (no sources, links, imports or requests).
pub(super) fn assert_self_contained(html: &str) {
    for outside in [
        "src=",
        "href=",
        "url(",
        "@import",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(
            !html.contains(outside),
            "the page must not load anything: {outside}"
        );
    }
}

/// The browser: Debian's chromium on PATH (scripts/test-full.sh installs it).
fn chromium() -> &'static str {
    for c in ["chromium", "chromium-browser"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c;
        }
    }
    panic!("headless Chromium is needed: install Debian's chromium (scripts/test-full.sh does it with apt-get)");
}

/// One browser at a time, so that the timed load does not share the cores with another one.
static BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Opens `url` in headless Chromium (one browser at a time), with `setup` adding options such as
/// a profile folder or `$HOME`; returns the browser's output, the attributes of `<body>` after the
/// page's script ran, and the DOM.
pub(super) fn open_in_chromium(
    url: &str,
    setup: impl FnOnce(&mut Command),
) -> (std::process::Output, BTreeMap<String, String>, String) {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let mut command = Command::new("timeout");
    command.args([
        "120",
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
    ]);
    setup(&mut command);
    let o = command.arg(url).output().expect("run chromium");
    assert!(o.status.success(), "chromium on {url}: {}", output_of(&o));
    let dom = String::from_utf8_lossy(&o.stdout).to_string();
    let start = dom.find("<body").expect("a body in the DOM");
    let tag = &dom[start..start + dom[start..].find('>').unwrap()];
    let attrs = tag
        .split(" data-")
        .skip(1)
        .filter_map(|a| a.split_once("=\""))
        .map(|(k, v)| (k.to_string(), v.trim_end_matches('"').to_string()))
        .collect();
    (o, attrs, dom)
}

/// The attributes of `<body>` after the page's script ran, the browser's log and DOM, and the
/// seconds the browser took (start, load, script, DOM written out).
fn load(page: &Path, hash: &str) -> (BTreeMap<String, String>, String, f64) {
    let t0 = Instant::now();
    let (o, attrs, dom) = open_in_chromium(&format!("file://{}{hash}", page.display()), |_| {});
    let secs = t0.elapsed().as_secs_f64();
    (
        attrs,
        format!("{}\n{dom}", String::from_utf8_lossy(&o.stderr)),
        secs,
    )
}

/// Loads the page and checks it ran without an error; returns the body's attributes and the DOM.
fn load_ok(page: &Path, hash: &str) -> (BTreeMap<String, String>, String, f64) {
    let (attrs, text, secs) = load(page, hash);
    assert_eq!(
        attrs.get("ready").map(String::as_str),
        Some("1"),
        "{hash}: {attrs:?}"
    );
    assert_eq!(
        attrs.get("errors").map(String::as_str),
        Some(""),
        "{hash}: {attrs:?}"
    );
    assert!(!text.contains("Uncaught"), "{hash}: a script error: {text}");
    (attrs, text, secs)
}

fn count(records: &[EpisodeRecord], f: impl Fn(&EpisodeRecord) -> bool) -> String {
    records.iter().filter(|r| f(r)).count().to_string()
}

#[test]
#[ignore = "needs Chromium (20 s or more): scripts/test-full.sh runs it"]
fn the_page_lists_filters_and_shows_episodes_in_chromium() {
    let dir = temp_dir();
    let (easy, hard) = (dir.path().join("easy.jsonl"), dir.path().join("hard.jsonl"));
    scripted_rollout(dir.path(), REPLIES, "easy", SEED, &easy);
    scripted_rollout(dir.path(), REPLIES, "hard", SEED, &hard);
    let page = dir.path().join("report.html");
    let o = eg(&[
        "replay",
        "html",
        easy.to_str().unwrap(),
        hard.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output_of(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let records: Vec<EpisodeRecord> = [&easy, &hard]
        .iter()
        .flat_map(|f| {
            read_episodes(f)
                .unwrap()
                .records
                .into_iter()
                .map(|(_, r)| r)
        })
        .collect();
    let n = records.len().to_string();

    let (all, _, _) = load_ok(&page, "");
    assert_eq!(
        (all["matching"].as_str(), all["listed"].as_str()),
        (n.as_str(), n.as_str())
    );
    let hard_n = count(&records, |r| r.profile.difficulty == Difficulty::Hard);
    let (a, _, _) = load_ok(&page, "#difficulty=hard");
    assert_eq!(a["matching"], hard_n);
    let left_easy = count(&records, |r| {
        r.profile.difficulty == Difficulty::Easy && r.end == Some(End::Left)
    });
    let (a, _, _) = load_ok(&page, "#difficulty=easy&end=left");
    assert_eq!(a["matching"], left_easy);
    let first = &records[0];
    let profile = format!("{}:{}", first.profile.scenario, first.profile.persona);
    let same_profile = count(&records, |r| {
        r.profile.scenario == first.profile.scenario && r.profile.persona == first.profile.persona
    });
    let (a, _, _) = load_ok(&page, &format!("#profile={profile}&reward_mode=behavior"));
    assert_eq!(a["matching"], same_profile);
    let (a, _, _) = load_ok(&page, "#step=1-5");
    assert_eq!(a["matching"], "0", "rollouts are all step 0");
    let (a, _, _) = load_ok(&page, "#step=0-0&reward_mode=trait");
    assert_eq!(a["matching"], "0", "no trait episodes");

    // An episode: its transcript, and its curve with one hover text per user turn.
    let (a, dom, _) = load_ok(&page, "#episode=3");
    assert_eq!(a["episode"], "3");
    let rec = &records[3];
    let curve = &dom[dom.find("id=\"curve\"").expect("the emotion curve")..];
    let tips = curve[..curve.find("</figure>").unwrap()]
        .matches("<title>emotion ")
        .count();
    assert_eq!(tips, rec.emotions().len(), "one hover text per user turn");
    let opening = rec.emotions()[0];
    assert!(
        dom.contains(&format!("user · emotion {opening}")),
        "transcript of episode 3"
    );
}

/// A log of `n` episodes over many steps, copied from `base` (the page cost is in the size).
fn big_log(base: &[EpisodeRecord], n: usize, out: &Path) {
    let mut w = EpisodeWriter::create(out).unwrap();
    for i in 0..n {
        let mut r = base[i % base.len()].clone();
        r.step = (i / 40) as u64;
        r.group = (i % 40) as u64;
        w.write(&r).unwrap();
    }
}

#[test]
#[ignore = "needs Chromium (20 s or more): scripts/test-full.sh runs it"]
fn ten_thousand_episodes_render_and_the_last_one_opens() {
    let dir = temp_dir();
    let small = dir.path().join("small.jsonl");
    scripted_rollout(dir.path(), REPLIES, "moderate", SEED, &small);
    let base: Vec<EpisodeRecord> = read_episodes(&small)
        .unwrap()
        .records
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let log = dir.path().join("big.jsonl");
    big_log(&base, 10_000, &log);
    let page = dir.path().join("big.html");
    let t0 = Instant::now();
    let o = eg(&[
        "replay",
        "html",
        log.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output_of(&o));
    let written = t0.elapsed().as_secs_f64();
    let (a, _, browser) = load_ok(&page, "#episode=9999");
    let total = written + browser;
    eprintln!(
        "10,000 episodes: page written in {written:.2} s, loaded and drawn in {browser:.2} s \
         (script {} ms), {total:.2} s in all",
        a["draw-ms"]
    );
    assert_eq!(
        (
            a["matching"].as_str(),
            a["listed"].as_str(),
            a["episode"].as_str()
        ),
        ("10000", "500", "9999")
    );
    // The time target (10,000 episodes in under 10 s) is a benchmark, not a test:
    // results/perf/replay-html.md.
}
