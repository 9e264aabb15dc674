//! `replay html --rate` and `judge agreement`: the rating page is seeded and blind and loads
//! nothing; in headless Chromium two raters rate every A/B pair with the keyboard, one of them
//! across a reload (progress restored from the browser's storage), and export (the download and the
//! page's copy agree); `judge agreement` joins the exports with the key and the logs into the
//! numbers computed here from the same data.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use empathy_gym::environment::episode::{read_episodes, EpisodeRecord};
use empathy_gym::replay::rate::krippendorff_alpha_interval;
use empathy_gym::report::stats::spearman;

use super::common::*;
use super::replay_html::open_in_chromium;

const SEED: u64 = 4;
/// The base policy's replies, and the trained one's: both play the same profiles.
const BASE: &[&str] = &["That sounds hard. What happened?"];
const TRAINED: &[&str] = &[
    "I'm so sorry. It makes sense that you feel this way; what has been the hardest part?",
    "That is a lot to carry. How are you holding up with all of it?",
];

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The base and trained logs, rolled out into `dir`.
fn logs(dir: &Path) -> (PathBuf, PathBuf) {
    let (base, trained) = (dir.join("base.jsonl"), dir.join("trained.jsonl"));
    let (db, dt) = (dir.join("b"), dir.join("t"));
    std::fs::create_dir_all(&db).unwrap();
    std::fs::create_dir_all(&dt).unwrap();
    scripted_rollout(&db, BASE, "easy", SEED, &base);
    scripted_rollout(&dt, TRAINED, "easy", SEED, &trained);
    (base, trained)
}

fn records(log: &Path) -> Vec<(usize, EpisodeRecord)> {
    read_episodes(log).unwrap().records
}

/// The key's rows as maps from column name to cell.
fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn rate_page(args: &[&str]) {
    let o = eg(&[&["replay", "html", "--rate"][..], args].concat());
    assert!(o.status.success(), "{}", output_of(&o));
}

/// Every string in the page's embedded data, and its object keys; fails on any number.
fn strings_of(v: &serde_json::Value, keys: &mut Vec<String>, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Number(n) => panic!("a number in the page's data: {n}"),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings_of(x, keys, out)),
        serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| {
            keys.push(k.clone());
            strings_of(x, keys, out)
        }),
        serde_json::Value::Bool(_) | serde_json::Value::Null => {}
    }
}

#[test]
fn the_rating_page_is_seeded_blind_and_self_contained() {
    let dir = temp_dir();
    let (base, _) = logs(dir.path());
    let page = |name: &str, seed: &str| {
        let out = dir.path().join(name);
        rate_page(&[s(&base), "--out", s(&out), "--seed", seed]);
        let html = std::fs::read_to_string(&out).unwrap();
        let key = read_csv(&out.with_extension("key.csv"));
        (html, key)
    };
    let (a, key_a) = page("a.html", "1");
    let (a2, key_a2) = page("a2.html", "1");
    let (_, key_b) = page("b.html", "2");
    assert_eq!(a, a2, "same seed, same page");
    assert_eq!(key_a, key_a2, "same seed, same key");
    let order = |key: &[BTreeMap<String, String>]| -> Vec<String> {
        key.iter().map(|r| r["line"].clone()).collect()
    };
    let recs = records(&base);
    assert_eq!(key_a.len(), recs.len(), "one item per episode");
    assert_ne!(order(&key_a), order(&key_b), "another seed, another order");
    let logged: Vec<String> = recs.iter().map(|(l, _)| l.to_string()).collect();
    assert_ne!(order(&key_a), logged, "shuffled");

    super::replay_html::assert_self_contained(&a);
    // The data the page carries: ids and dialogue text, nothing else.
    let start = a.find("id=\"data\">").unwrap() + "id=\"data\">".len();
    let data: serde_json::Value =
        serde_json::from_str(&a[start..start + a[start..].find("</script>").unwrap()]).unwrap();
    let (mut keys, mut strings) = (Vec::new(), Vec::new());
    strings_of(&data, &mut keys, &mut strings);
    keys.sort();
    keys.dedup();
    assert_eq!(
        keys,
        ["id", "items", "scales", "side", "sides", "study", "text", "turns", "user"]
    );
    for (_, r) in &recs {
        let secrets = [
            r.profile.scenario.clone(),
            r.profile.persona.clone(),
            r.run.clone(),
            r.policy.model.clone(),
            r.reward.unwrap().to_string(),
            r.final_emotion().to_string(),
        ];
        for secret in &secrets {
            assert!(!strings.contains(secret), "the page carries `{secret}`");
        }
        assert!(!a.contains(&format!("\"{}\"", r.profile.scenario)));
    }
    for row in &key_a {
        assert!(
            !a.contains(&row["episode"]),
            "the page carries a fingerprint"
        );
    }
    assert!(!a.contains("base.jsonl"), "the page names the log");
}

/// Runs the page in headless Chromium with the browser profile `profile` and `$HOME` `home`
/// (where downloads go); returns `<body>`'s attributes and the DOM.
fn browse(
    page: &Path,
    hash: &str,
    profile: &Path,
    home: &Path,
) -> (BTreeMap<String, String>, String) {
    let url = format!("file://{}#{hash}", page.display());
    let (o, attrs, dom) = open_in_chromium(&url, |c| {
        c.arg(format!("--user-data-dir={}", profile.display()))
            .env("HOME", home);
    });
    assert_eq!(attrs["ready"], "1", "{attrs:?}");
    assert_eq!(attrs["errors"], "", "{attrs:?}");
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("Uncaught"),
        "{}",
        output_of(&o)
    );
    (attrs, dom)
}

/// The CSV the export button put into `<pre id="export">`.
fn exported(dom: &str) -> String {
    let open = "<pre id=\"export\">";
    let start = dom.find(open).expect("the export") + open.len();
    dom[start..start + dom[start..].find("</pre>").unwrap()]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// What rater `r` gives item `i`'s side `side` (0: A, 1: B) on the three scales.
fn typed(r: usize, i: usize, side: usize) -> [u8; 3] {
    [0, 1, 2].map(|k| ((i * (3 + r) + side * 2 + k * (1 + r)) % 5 + 1) as u8)
}

/// Alice's keys for items `range`: A's three scales then B's, then the next dialogue.
fn alice_keys(range: std::ops::Range<usize>) -> Vec<String> {
    range
        .flat_map(|i| {
            let mut k: Vec<String> = [typed(0, i, 0), typed(0, i, 1)]
                .concat()
                .iter()
                .map(u8::to_string)
                .collect();
            k.push("n".into());
            k
        })
        .collect()
}

/// Bob's keys: to B first (arrow), its three scales, back to A (arrow, Shift+Tab twice), A's
/// three, then Enter.
fn bob_keys(range: std::ops::Range<usize>) -> Vec<String> {
    range
        .flat_map(|i| {
            let b = typed(1, i, 1).map(|v| v.to_string());
            let a = typed(1, i, 0).map(|v| v.to_string());
            let mut k = vec!["ArrowRight".to_string()];
            k.extend(b);
            k.extend(["ArrowLeft", "Shift+Tab", "Shift+Tab"].map(String::from));
            k.extend(a);
            k.push("Enter".into());
            k
        })
        .collect()
}

#[test]
#[ignore = "needs Chromium (20 s or more): scripts/test-full.sh runs it"]
fn raters_rate_with_keys_export_and_judge_agreement_joins_the_logs() {
    let dir = temp_dir();
    let d = dir.path();
    let (base, trained) = logs(d);
    let page = d.join("rate.html");
    rate_page(&[
        "--pair",
        s(&base),
        s(&trained),
        "--out",
        s(&page),
        "--seed",
        "5",
    ]);
    let key = read_csv(&d.join("rate.key.csv"));
    let mut items: Vec<String> = key.iter().map(|r| r["item"].clone()).collect();
    items.dedup();
    let n = items.len();
    assert!(n >= 10 && key.len() == 2 * n, "{n} pairs");

    // Alice in one sitting; the download and the page's copy agree. Headless Chromium with
    // --dump-dom may exit before it has written a download the script started, so a sitting
    // without the file is run again (fresh profile) up to three times; the page's copy is checked
    // every time.
    let hash = format!("rater=alice&keys={}&export", alice_keys(0..n).join(","));
    let mut downloads: Vec<PathBuf> = Vec::new();
    let mut alice = String::new();
    for attempt in 0..3 {
        let home = d.join(format!("home-alice-{attempt}"));
        let profile = d.join(format!("profile-alice-{attempt}"));
        let (attrs, dom) = browse(&page, &hash, &profile, &home);
        assert_eq!(attrs["complete"], n.to_string(), "{attrs:?}");
        assert_eq!(attrs["stored"], "1");
        alice = exported(&dom);
        downloads = std::fs::read_dir(home.join("Downloads"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        if !downloads.is_empty() {
            break;
        }
    }
    assert_eq!(
        downloads.len(),
        1,
        "the export downloads one file: {downloads:?}"
    );
    let name = downloads[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert!(
        name.starts_with("ratings-") && name.ends_with("-alice.csv"),
        "{name}"
    );
    assert_eq!(std::fs::read_to_string(&downloads[0]).unwrap(), alice);

    // Bob in two sittings: the page restores his ratings and position from the browser.
    let (bob_profile, bob_home) = (d.join("profile-bob"), d.join("home-bob"));
    let half = n / 2;
    let hash = format!("rater=bob&keys={}", bob_keys(0..half).join(","));
    let (first, _) = browse(&page, &hash, &bob_profile, &bob_home);
    assert_eq!(first["complete"], half.to_string(), "{first:?}");
    let hash = format!("keys={}&export", bob_keys(half..n).join(","));
    let (second, dom) = browse(&page, &hash, &bob_profile, &bob_home);
    assert_eq!(second["restored"], (2 * half).to_string(), "{second:?}");
    assert_eq!(second["complete"], n.to_string(), "{second:?}");
    let bob = exported(&dom);

    // The exports hold what was typed, item by item in page order.
    let (alice_csv, bob_csv) = (d.join("alice.csv"), d.join("bob.csv"));
    std::fs::write(&alice_csv, &alice).unwrap();
    std::fs::write(&bob_csv, &bob).unwrap();
    for (r, file) in [(0, &alice_csv), (1, &bob_csv)] {
        let rows = read_csv(file);
        assert_eq!(rows.len(), 2 * n);
        for (j, row) in rows.iter().enumerate() {
            let (i, side) = (j / 2, j % 2);
            assert_eq!(
                (&row["item"], row["side"].as_str()),
                (&items[i], ["A", "B"][side])
            );
            let got = [&row["empathy"], &row["relevance"], &row["naturalness"]];
            assert_eq!(
                got.map(|v| v.parse::<u8>().unwrap()),
                typed(r, i, side),
                "{row:?}"
            );
            assert!(row["rated_at"].ends_with('Z'), "{row:?}");
        }
    }

    // The numbers, computed here from the key, the logs and what was typed.
    let by_log: BTreeMap<String, BTreeMap<usize, EpisodeRecord>> = [&base, &trained]
        .iter()
        .map(|l| (s(l).to_string(), records(l).into_iter().collect()))
        .collect();
    let (mut human, mut reward, mut units) = (Vec::new(), Vec::new(), Vec::new());
    let mut trained_preferred = 0;
    let mut trained_means = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let mut means = BTreeMap::new();
        for (side, label) in ["A", "B"].iter().enumerate() {
            let row = key
                .iter()
                .find(|r| &r["item"] == item && &r["side"] == label)
                .unwrap();
            let rec = &by_log[&row["log"]][&row["line"].parse::<usize>().unwrap()];
            let (a, b) = (typed(0, i, side)[0] as f64, typed(1, i, side)[0] as f64);
            human.push((a + b) / 2.0);
            reward.push(rec.reward.unwrap());
            units.push(vec![a, b]);
            means.insert(row["arm"].clone(), (a + b) / 2.0);
        }
        trained_preferred += usize::from(means["trained"] > means["base"]);
        trained_means.push(means["trained"]);
    }
    let rho = spearman(&human, &reward);
    let alpha = krippendorff_alpha_interval(&units);
    let mean = human.iter().sum::<f64>() / human.len() as f64;

    let report = d.join("agreement.md");
    let o = eg(&[
        "judge",
        "agreement",
        s(&alice_csv),
        s(&bob_csv),
        "--key",
        s(&d.join("rate.key.csv")),
        "--out",
        s(&report),
    ]);
    assert!(o.status.success(), "{}", output_of(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(out.starts_with(&md), "{out}");
    let m = 2 * n;
    assert!(
        md.starts_with(&format!(
            "{m} of {m} dialogues rated by 2 raters: alice ({m}), bob ({m})"
        )),
        "{md}"
    );
    let row = format!("| empathy | {m} | {mean:.2} | {rho:.3} [");
    assert!(md.contains(&row), "{row}\n{md}");
    let row = format!("| empathy | {m} | 2 | {alpha:.3} [");
    assert!(md.contains(&row), "{row}\n{md}");
    let row = format!("| empathy | {n} | {trained_preferred}/{n} (");
    assert!(md.contains(&row), "{row}\n{md}");
    let trained_mean = trained_means.iter().sum::<f64>() / n as f64;
    let row = format!("| trained | {n} | {trained_mean:.2} |");
    assert!(md.contains(&row), "{row}\n{md}");

    // A row for an item the key does not list names the file, line and field; exit code 2.
    let bad = d.join("bad.csv");
    std::fs::write(
        &bad,
        format!(
            "{}carol,ffffffff,A,3,3,3,\n",
            &alice[..alice.find('\n').unwrap() + 1]
        ),
    )
    .unwrap();
    let o = eg(&[
        "judge",
        "agreement",
        s(&bad),
        "--key",
        s(&d.join("rate.key.csv")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", output_of(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.csv: line 2, field item: item ffffffff is not in the key"),
        "{err}"
    );
}
