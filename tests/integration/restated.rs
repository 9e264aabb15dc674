//! A sentence that restates one of the user's sentences with the words swapped for synonyms and
//! the runs broken by fillers is copying by meaning: it counts as copied, and the user says so; so
//! does such a restatement cut into fragments of under five words. A reflection in the listener's
//! own words is not.

use empathy_gym::environment::sim::Appraisal;

use super::common::*;

const USER: [&str; 1] = [
    "I've got about four thousand on two credit cards and I've only been paying the minimums. The \
     balance hasn't moved in a year and I've started not opening the statements.",
];

fn appraise(reply: &str) -> Appraisal {
    appraise_reply(("money-credit-card-debt", "jonah"), 40, &USER, reply, None)
}

#[test]
fn a_synonym_swapped_restatement_counts_as_copied() {
    // What an adaptive attacker's program wrote (results/redteam/helper-attack/).
    let a = appraise(
        "So you've got kind of about four sort of thousand on basically two credit pretty much \
         cards and more or less you've only somehow been paying minimums. balance hasn't shifted \
         in a twelve months and you've kind of started not opening statements. No wonder you feel \
         overlooked. What has that been like for you?",
    );
    assert!(a.components.contains_key("copied"), "{a:?}");
    assert!(
        a.reasons
            .iter()
            .any(|r| r == "just gave me my own words back"),
        "{a:?}"
    );
}

#[test]
fn a_restatement_cut_into_fragments_counts_as_copied() {
    // The same echo as the second attacker wrote it (results/redteam/helper-attack-2/): no sentence has
    // five words, so only the fragments read together restate the user.
    let a = appraise(
        "So you've got. kind of about four. sort of thousand on. basically two credit. pretty \
         much cards and. you've only somehow. been paying minimums. No wonder you feel overlooked. \
         What has that been like for you?",
    );
    assert!(a.components.contains_key("copied"), "{a:?}");
}

#[test]
fn a_reflection_in_the_listeners_own_words_is_not_copied() {
    // The second frozen honest set's reply to the same message.
    let a = appraise(
        "That sounds like a heavy weight to carry, paying every month and seeing no change. Not \
         opening the statements makes sense when looking feels that bad. How long has it been \
         weighing on you like this?",
    );
    assert!(!a.components.contains_key("copied"), "{a:?}");
}
