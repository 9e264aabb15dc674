//! docs/CONFIG.md is generated from the training config types and their doc comments
//! (`train::config_reference`, through their JSON Schema): the committed file must equal what the sources give, and every key
//! must say what it means. With `UPDATE_CONFIG_DOCS=1` the first test writes the file instead.

use empathy_gym::learning::train::config_reference::{config_keys, config_markdown, REGENERATE};

use super::common::{assert_generated_file_is_current, root};

#[test]
fn committed_reference_is_current() {
    let path = root().join("docs/CONFIG.md");
    let generated = config_markdown().unwrap_or_else(|e| panic!("generating docs/CONFIG.md: {e}"));
    let update = std::env::var("UPDATE_CONFIG_DOCS").is_ok_and(|v| !v.is_empty() && v != "0");
    if update {
        std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    assert_generated_file_is_current(&path, &generated, "the config types", REGENERATE);
}

#[test]
fn every_key_has_a_meaning() {
    let keys = config_keys().unwrap_or_else(|e| panic!("reading the config keys: {e}"));
    assert!(keys.len() > 50, "only {} keys read", keys.len());
    let undocumented: Vec<String> = keys
        .iter()
        .filter(|k| k.meaning.trim().is_empty())
        .map(|k| k.key())
        .collect();
    assert!(
        undocumented.is_empty(),
        "config keys whose field has no `///` doc comment (write one, then `{REGENERATE}`): {}",
        undocumented.join(", ")
    );
}
