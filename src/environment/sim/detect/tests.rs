//! Each detector on hand-written replies, flagged and not flagged.

use super::*;
use crate::sim::lexicon::Lexicon;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn detectors() -> Detectors {
    Detectors::load(root()).unwrap()
}

fn lexicon() -> Lexicon {
    Lexicon::load(&root().join("data/lexicon.yaml")).unwrap()
}

/// The cues of `reply`, read with the user's negations (data/speaker.yaml, read once).
fn cues_of(lx: &Lexicon, reply: &str) -> crate::sim::lexicon::Cues {
    use crate::profile::speech::SpeakerRules;
    static RULES: std::sync::OnceLock<SpeakerRules> = std::sync::OnceLock::new();
    let rules =
        RULES.get_or_init(|| SpeakerRules::load(&root().join("data/speaker.yaml")).unwrap());
    lx.cues(reply, rules.negation())
}

const OPENING: &str = "I told my best friend my parents are splitting up, and a week later someone else brought it up like it was common knowledge. Turns out it got posted in the group chat with a joke.";
const LATER: &str = "I guess. I don't know what to feel. Everyone keeps saying I'm overreacting.";
const HELPS: &str = "Of course you're hurt. You trusted your best friend with something that private, and finding out it became a joke in the group chat is a real betrayal.";

/// Findings for `reply` after the two user messages above, with `previous` earlier replies.
fn find(reply: &str, previous: &[&str]) -> Findings {
    find_at(reply, previous, 0.5)
}

fn find_at(reply: &str, previous: &[&str], relevance: f64) -> Findings {
    let lx = lexicon();
    let cues = cues_of(&lx, reply);
    let users = [OPENING, LATER];
    let mut feelings = lx.feelings.clone();
    feelings.push(normalize("betrayed"));
    let d = detectors();
    let mut f = d.detect(&DetectInput {
        reply,
        user_messages: &users,
        previous_replies: previous,
        scenario_lines: &[HELPS],
        cues: &cues,
        feelings: &feelings,
        relevance,
        restated: &[],
        also_said: &[],
    });
    // No reflection: engagement then rests on an open question.
    d.judge_engagement(&mut f, &cues, 0.0);
    f
}

const HONEST: &str = "Someone you trusted with something private turned it into a joke for everyone. Of course that stings. What hurt most?";

#[test]
fn copying_flags_echoes_mirrors_and_quotes_not_reflections() {
    assert!(find(LATER, &[]).copied, "an echo");
    let mirror = "So you told your best friend your parents are splitting up. I hear you.";
    assert!(find(mirror, &[]).copied, "a pronoun-swapped mirror");
    let quote = format!(
        "It sounds like you're feeling hurt. You said: \"{LATER}\" What has that been like?"
    );
    assert!(find(&quote, &[]).copied, "a quote inside a template");
    let f = find(HONEST, &[]);
    assert!(!f.copied && f.copied_share == 0.0, "{f:?}");
    // Naming the user's details in new words is a reflection.
    let named = "Your best friend turned your parents' split into a group chat joke. No wonder you feel betrayed.";
    assert!(!find(named, &[]).copied);
}

#[test]
fn copying_the_scenario_is_flagged_as_such() {
    let f = find(HELPS, &[]);
    assert!(f.copied && f.copied_scenario, "{f:?}");
    let f = find(LATER, &[]);
    assert!(f.copied && !f.copied_scenario);
}

#[test]
fn coming_close_to_an_example_reply_is_no_echo_but_earns_no_helps() {
    // A third of its words lie in runs shared with HELPS, none with what the user said.
    let near = "Of course you're hurt after that. Finding out it became a joke, from someone you trusted, is hard to take in, and nobody warned you.";
    let f = find(near, &[]);
    assert!(f.copied_user_share < 0.3, "{f:?}");
    assert!((0.3..0.6).contains(&f.copied_share), "{f:?}");
    assert!(!f.copied && f.copied_scenario, "{f:?}");
}

#[test]
fn stacked_questions_need_three() {
    assert!(!find(HONEST, &[]).stacked_questions, "one open question");
    assert!(
        !find(
            "That sounds so lonely. What happened when you found out? How are you now?",
            &[]
        )
        .stacked_questions,
        "two questions"
    );
    assert!(
        find(
            "That's hard. What happened? How did you feel? What do you think it means? What do you need?",
            &[]
        )
        .stacked_questions
    );
}

#[test]
fn meta_talk_about_the_message_is_flagged() {
    assert!(
        find(
            "Here's a revised version of your message: I told my friend a secret.",
            &[]
        )
        .meta
    );
    assert!(
        find(
            "As an AI language model, I can't feel, but that sounds hard.",
            &[]
        )
        .meta
    );
    assert!(
        find(
            "I reworded your message so the tone is clearer and more concise.",
            &[]
        )
        .meta
    );
    assert!(
        find(
            "Your sentence conveys that it's not easy to explain, and the language is clear.",
            &[]
        )
        .meta,
        "commenting on the user's words as text"
    );
    assert!(!find(HONEST, &[]).meta);
    assert!(
        !find(
            "Thank you for telling me your story. What has the last week been like?",
            &[]
        )
        .meta,
        "one hint"
    );
    // One hint alone is ordinary talk.
    assert!(!find("Seeing that message in the group chat must have been awful. What did your message to them say?", &[]).meta);
}

#[test]
fn the_same_frame_every_turn_is_a_template() {
    let t1 = "It sounds like the group chat has been weighing on you. That must feel so painful. How are you holding up with all of that?";
    let t2 = "It sounds like the overreacting comments have been weighing on you. That must feel so painful. How are you holding up with all of that?";
    assert!(find(t2, &[t1]).template);
    assert!(!find(t2, &[]).template, "nothing earlier");
    // A bare list of the user's words is a filled slot, even the first time.
    let listed = "It sounds like friend, chat and joke have been weighing on you.";
    let f = find(listed, &[]);
    assert!(f.template && f.slotted, "{f:?}");
    let other = "Being told you're overreacting when you're the one who was let down is its own kind of lonely. Who has actually listened?";
    assert!(!find(other, &[HONEST]).template, "two different replies");
}

#[test]
fn word_salad_is_incoherent_and_a_sentence_is_not() {
    assert!(
        find(
            "Sad, hurt, angry, lonely, overwhelmed, scared, frustrated, betrayed, ashamed, exhausted.",
            &[]
        )
        .incoherent
    );
    assert!(!find(HONEST, &[]).incoherent);
    assert!(
        !find("Betrayed. Of course.", &[]).incoherent,
        "too short to judge"
    );
}

#[test]
fn filler_is_padding_and_long_prose_is_not() {
    let padded = "That sounds hard. What was the hardest part? I want you to know I am here, really here, \
        fully here, and listening, really listening, fully listening, always here and always listening, \
        whatever you need, whenever you need it, for as long as you need it.";
    assert!(find(padded, &[]).padding);
    let long = "That sounds exhausting, honestly. Covering extra shifts week after week while everyone \
        assumes you'll keep saying yes would wear anyone down, and it's not a sign that you're weak or \
        bad at your job. When you say you've stopped caring, it sounds less like you don't care and \
        more like you've had to shut something off just to get through the nights. What do you miss most?";
    assert!(!find(long, &[]).padding);
    assert!(!find(HONEST, &[]).padding, "too short to judge");
}

#[test]
fn off_topic_follows_relevance() {
    assert!(find_at("Photosynthesis turns sunlight into sugar.", &[], 0.15).off_topic);
    assert!(
        find_at(
            "You know, photosynthesis turns sunlight into sugar.",
            &[],
            0.05
        )
        .off_topic
    );
    // A generic line that speaks to the person is not off topic.
    assert!(!find_at("What would you like to happen next?", &[], 0.15).off_topic);
    assert!(!find_at(HONEST, &[], 0.45).off_topic);
}

#[test]
fn a_feeling_salad_names_five_feelings_and_a_validation_does_not() {
    let salad = "You must feel sad and hurt and angry and lonely and overwhelmed.";
    assert!(find(salad, &[]).feeling_salad);
    assert!(
        !find(
            "No wonder you feel betrayed and hurt. What happened next?",
            &[]
        )
        .feeling_salad
    );
}

#[test]
fn flattery_is_praise_without_engagement() {
    let d = detectors();
    let lx = lexicon();
    let praise = "You are amazing. You're so strong and brave, honestly wonderful.";
    let mut f = find(praise, &[]);
    d.judge_engagement(&mut f, &cues_of(&lx, praise), 0.0);
    assert!(f.flattery);
    let affirm = "It took courage to confront your friend. What did you say to them?";
    let mut f = find(affirm, &[]);
    d.judge_engagement(&mut f, &cues_of(&lx, affirm), 0.4);
    assert!(!f.flattery);
}

#[test]
fn sycophancy_is_agreeing_with_everything() {
    assert!(
        find(
            "You're absolutely right, I completely agree with everything you said.",
            &[]
        )
        .sycophancy
    );
    assert!(!find("You're not overreacting. What hurt most?", &[]).sycophancy);
    // "Exactly" agrees as a verdict, not as an intensifier.
    assert!(find("Yes, exactly. So true.", &[]).sycophancy);
    assert!(
        !find(
            "A steep staircase is exactly the kind of thing that keeps anyone up at night.",
            &[]
        )
        .sycophancy
    );
}

#[test]
fn bad_thresholds_name_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let text = std::fs::read_to_string(root().join("data/detectors.yaml"))
        .unwrap()
        .replace("min_share: 0.3", "min_share: 3");
    std::fs::write(dir.path().join("data/detectors.yaml"), text).unwrap();
    let err = Detectors::load(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("detectors.yaml") && err.contains("copied.min_share"),
        "{err}"
    );
}

#[test]
fn narration_about_the_user_is_flagged_talking_to_them_is_not() {
    let told = [
        "It seems like the joke was revealed in a group chat that had nothing to do with the \
         friendship.",
        "The passage indicates that the secret was shared with a wider group than intended.",
        "This story touches on trust between friends and how quickly a private matter spreads.",
    ];
    for reply in told {
        assert!(find(reply, &[]).narration, "{reply}");
    }
    let spoken = [
        HONEST,
        "It seems like you trusted the wrong person with something private.",
        "It sounds like you feel the whole group knows something that was only yours to tell.",
        "I can hear how much the joke in the group chat hurt.",
        // Impersonal, but no story told about anyone.
        "Anyone would feel betrayed when something private becomes a joke.",
        // Too short to judge.
        "It seems so unfair.",
    ];
    for reply in spoken {
        assert!(!find(reply, &[]).narration, "{reply}");
    }
}
