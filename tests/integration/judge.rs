//! `judge score` on conversations the project did not generate (an ESConv-shaped dialogue, pairs in
//! EPITOME's columns, an episode log), and `judge epitome` on a corpus fixture in EPITOME's format
//! that these tests write themselves.

use std::path::Path;

use super::common::*;

fn csv_rows(path: &Path) -> Vec<csv::StringRecord> {
    csv::Reader::from_path(path)
        .unwrap()
        .records()
        .map(Result::unwrap)
        .collect()
}

/// Runs `judge score INPUT --out OUT`.
fn judge_score(input: &Path, out: &Path) -> std::process::Output {
    eg(&[
        "judge",
        "score",
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

fn header_index(path: &Path, name: &str) -> usize {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.headers().unwrap().iter().position(|h| h == name).unwrap()
}

/// A hand-written dialogue in ESConv's shape: the seeker's messages, a supporter who first
/// listens, then dismisses, then asks; consecutive seeker messages are joined; survey scores as
/// ESConv writes them (strings).
const ESCONV: &str = r#"[{
  "emotion_type": "anxiety",
  "problem_type": "job crisis",
  "situation": "I might lose my job after the merger.",
  "survey_score": {"seeker": {"initial_emotion_intensity": "5", "final_emotion_intensity": "2", "empathy": "4"}},
  "dialog": [
    {"speaker": "seeker", "content": "Hi. My company is merging and I'm scared I'll be laid off."},
    {"speaker": "seeker", "content": "I have two kids and a mortgage, and I can't sleep."},
    {"speaker": "supporter", "content": "That sounds frightening, with the kids and the mortgage riding on it. No wonder you can't sleep."},
    {"speaker": "seeker", "content": "Yeah. Everyone at work is whispering about who goes first."},
    {"speaker": "supporter", "content": "Calm down, it's not the end of the world. Lots of people lose jobs."},
    {"speaker": "seeker", "content": "That doesn't really help."},
    {"speaker": "supporter", "content": "I'm sorry, that was dismissive. What worries you most about the merger?"}
  ]
}]"#;

#[test]
fn an_esconv_dialogue_gets_a_trajectory_and_its_survey() {
    let dir = temp_dir();
    let input = dir.path().join("esconv.json");
    std::fs::write(&input, ESCONV).unwrap();
    let out = dir.path().join("judged");
    let o = judge_score(&input, &out);
    assert!(o.status.success(), "{}", output_of(&o));
    assert!(
        output_of(&o).contains("judged 1 conversations, 3 replies"),
        "{}",
        output_of(&o)
    );
    let dialogues = out.join("dialogues.csv");
    let rows = csv_rows(&dialogues);
    assert_eq!(rows.len(), 1);
    let d = &rows[0];
    let trajectory: Vec<i32> = d[header_index(&dialogues, "trajectory")]
        .split(' ')
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(trajectory.len(), 4, "start and one emotion per reply");
    assert_eq!(
        trajectory[0], 40,
        "the judge's difficulty (moderate) starts at 40"
    );
    // The seeker is scared: the derived need is reassurance, and "scared" is their feeling.
    assert_eq!(&d[header_index(&dialogues, "need")], "be_reassured");
    assert!(d[header_index(&dialogues, "feelings")].contains("scared"));
    assert!(d[header_index(&dialogues, "labels")].contains("seeker.empathy=4"));
    // Per reply: the listening reply moves the emotion up, the dismissive one down.
    let replies = out.join("replies.csv");
    let delta = header_index(&replies, "delta");
    let deltas: Vec<i32> = csv_rows(&replies)
        .iter()
        .map(|r| r[delta].parse().unwrap())
        .collect();
    assert_eq!(deltas.len(), 3);
    assert!(deltas[0] > deltas[1], "{deltas:?}");
    let minimize = header_index(&replies, "minimize");
    let second: f64 = csv_rows(&replies)[1][minimize].parse().unwrap();
    assert!(second >= 0.5, "the dismissive reply minimizes: {second}");
    for (k, w) in trajectory.windows(2).enumerate() {
        assert_eq!(w[1] - w[0], deltas[k], "the trajectory follows the deltas");
    }
    let jsonl = std::fs::read_to_string(out.join("judged.jsonl")).unwrap();
    let j: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(j["derived"]["need_because"], "scared");
    assert_eq!(j["replies"].as_array().unwrap().len(), 3);
}

#[test]
fn esconv_lines_with_the_platform_speaker_names_are_read_and_bad_speakers_named() {
    let dir = temp_dir();
    let input = dir.path().join("dialogues.jsonl");
    std::fs::write(
        &input,
        concat!(
            r#"{"dialog": [{"speaker": "speaker", "content": "My sister stopped talking to me."}, "#,
            r#"{"speaker": "listener", "content": "That must hurt. What happened between you?"}]}"#,
            "\n",
            r#"{"dialog": [{"speaker": "seeker", "content": "I feel stuck."}, "#,
            r#"{"speaker": "therapist", "content": "Why?"}]}"#,
            "\n",
        ),
    )
    .unwrap();
    let out = dir.path().join("judged");
    let o = judge_score(&input, &out);
    assert_eq!(o.status.code(), Some(2), "{}", output_of(&o));
    let text = output_of(&o);
    assert!(
        text.contains("line 2, dialog[1].speaker") && text.contains("`therapist` is not a speaker"),
        "{text}"
    );
    assert_eq!(
        csv_rows(&out.join("dialogues.csv")).len(),
        1,
        "line 1 was judged"
    );
}

#[test]
fn a_bad_row_is_named_and_the_rows_before_it_are_kept() {
    let dir = temp_dir();
    let input = dir.path().join("pairs.csv");
    std::fs::write(
        &input,
        "sp_id,rp_id,seeker_post,response_post,level\n\
         a1,r1,I failed my exam again.,That sounds so discouraging. What happened?,2\n\
         a2,r2,My cat died.,I'm so sorry. How long did you have her?,2\n\
         a3,r3,Nobody texts me back.,,0\n\
         a4,r4,I hate my job.,Quit then.,0\n",
    )
    .unwrap();
    let out = dir.path().join("judged");
    let o = judge_score(&input, &out);
    assert_eq!(o.status.code(), Some(2), "{}", output_of(&o));
    let text = output_of(&o);
    assert!(
        text.contains("line 4, response_post") && text.contains("pairs.csv"),
        "{text}"
    );
    assert!(text.contains("the 2 conversations before it"), "{text}");
    assert_words_for_people("judge on a bad row", &text);
    let rows = csv_rows(&out.join("replies.csv"));
    let ids: Vec<&str> = rows.iter().map(|r| &r[0]).collect();
    assert_eq!(ids, ["a1/r1", "a2/r2"]);
    let dialogues = out.join("dialogues.csv");
    assert!(csv_rows(&dialogues)[0][header_index(&dialogues, "labels")].contains("level=2"));
}

#[test]
fn an_episode_log_is_judged_with_its_logged_reward_beside() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    scripted_rollout(
        dir.path(),
        &["That sounds really hard. What has been the worst part of it?"],
        "moderate",
        3,
        &log,
    );
    let out = dir.path().join("judged");
    let o = judge_score(&log, &out);
    assert!(o.status.success(), "{}", output_of(&o));
    let dialogues = out.join("dialogues.csv");
    let rows = csv_rows(&dialogues);
    let logged = empathy_gym::environment::episode::read_episodes(&log)
        .unwrap()
        .records;
    assert_eq!(rows.len(), logged.len());
    for (row, (_, rec)) in rows.iter().zip(&logged) {
        let labels = &row[header_index(&dialogues, "labels")];
        assert!(labels.contains("logged.reward="), "{labels}");
        let replies: usize = row[header_index(&dialogues, "replies")].parse().unwrap();
        assert_eq!(replies, rec.assistant_turns().len());
    }
}

/// Posts and responses in EPITOME's three files; the levels are this fixture's own.
const PAIRS: &[(&str, &str, &str, [u8; 3])] = &[
    (
        "I lost my job today and I feel worthless.",
        "I'm so sorry. Losing a job can make anyone feel worthless for a while. What happened?",
        "",
        [2, 1, 2],
    ),
    (
        "I lost my job today and I feel worthless.",
        "Just apply somewhere else.",
        "",
        [0, 0, 0],
    ),
    (
        "My girlfriend left me and I can't stop crying.",
        "That sounds heartbreaking, no wonder you keep crying. How long were you together?",
        "",
        [2, 2, 2],
    ),
    (
        "My girlfriend left me and I can't stop crying.",
        "Plenty of fish in the sea.",
        "",
        [0, 0, 0],
    ),
    (
        "Nobody came to my birthday.",
        "That must have hurt so much. Do you want to talk about it?",
        "",
        [2, 1, 1],
    ),
    ("Nobody came to my birthday.", "lol same", "", [0, 1, 0]),
    (
        "I can't focus on anything anymore.",
        "How long has it been like this for you?",
        "",
        [0, 0, 2],
    ),
    (
        "I can't focus on anything anymore.",
        "Drink more coffee.",
        "",
        [0, 0, 0],
    ),
];

/// The `sp_id` of the fixture's `i`-th post: sp1 falls in the test part, sp2 to sp4 in dev.
fn post_id(i: usize) -> String {
    format!("sp{}", i + 1)
}

fn write_corpus(dir: &Path) {
    for (k, name) in [
        "emotional-reactions-reddit.csv",
        "interpretations-reddit.csv",
        "explorations-reddit.csv",
    ]
    .iter()
    .enumerate()
    {
        let mut w = csv::Writer::from_path(dir.join(name)).unwrap();
        w.write_record([
            "sp_id",
            "rp_id",
            "seeker_post",
            "response_post",
            "level",
            "rationales",
        ])
        .unwrap();
        for (i, (post, response, rationale, levels)) in PAIRS.iter().enumerate() {
            // Four posts with two responses each; the split hashes the sp_id.
            let sp = post_id(i / 2);
            w.write_record([
                sp.as_str(),
                &format!("rp{i}"),
                post,
                response,
                &levels[k].to_string(),
                rationale,
            ])
            .unwrap();
        }
        w.flush().unwrap();
    }
}

#[test]
fn epitome_reports_each_mechanism_on_the_fixed_split() {
    let dir = temp_dir();
    write_corpus(dir.path());
    let report = dir.path().join("epitome.md");
    let o = eg(&[
        "judge",
        "epitome",
        dir.path().to_str().unwrap(),
        "--part",
        "both",
        "--resamples",
        "50",
        "--out",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output_of(&o));
    let text = std::fs::read_to_string(&report).unwrap();
    let dev = (0..4)
        .filter(|&i| empathy_gym::judge::epitome::Part::of(&post_id(i)).as_str() == "dev")
        .count()
        * 2;
    assert!(dev > 0 && dev < 8, "the fixture has both parts");
    assert!(
        text.contains(&format!("The dev part ({dev} pairs)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("The test part ({} pairs)", 8 - dev)),
        "{text}"
    );
    for measure in [
        "max(validate, reassure) | emotional reactions",
        "reflect | interpretations",
        "open_question | explorations",
        "emotion change (the reward) | sum of the three levels",
    ] {
        assert!(text.contains(measure), "{measure} missing:\n{text}");
    }
    // A file without a level column is refused with the file and the fix.
    std::fs::write(
        dir.path().join("explorations-reddit.csv"),
        "sp_id,rp_id,seeker_post,response_post\nx,y,a,b\n",
    )
    .unwrap();
    let o = eg(&["judge", "epitome", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let text = output_of(&o);
    assert!(
        text.contains("explorations-reddit.csv") && text.contains("no `level` column"),
        "{text}"
    );
}
