//! The headline tables of README.md and results/README.md are generated from the files they cite
//! (`replay::headline`, `results/tables.yaml`): the committed documents must equal what those
//! files give now, and each row's commit must be the last one that changed its file.

use std::process::Command;

use empathy_gym::replay::headline::{generate, Spec, REGENERATE, SPEC};

use super::common::{assert_generated_file_is_current, root};

#[test]
fn committed_tables_equal_what_their_files_give() {
    for (path, generated) in generate(&root()).unwrap_or_else(|e| panic!("{e}")) {
        assert_generated_file_is_current(&path, &generated, "the files it cites", REGENERATE);
    }
}

#[test]
fn each_row_names_the_commit_that_last_changed_its_file() {
    let spec = Spec::load(&root().join(SPEC)).unwrap_or_else(|e| panic!("{e}"));
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(root()).output();
    match git(&["rev-parse", "--is-shallow-repository"]) {
        Ok(out) if out.status.success() && out.stdout.starts_with(b"false") => {}
        _ => {
            eprintln!("skipped: no full git history here to check the rows' commits against");
            return;
        }
    }
    for table in &spec.tables {
        for row in &table.rows {
            let file = row
                .source
                .episodes
                .as_deref()
                .or(row.source.csv.as_deref())
                .unwrap();
            let out = git(&["log", "--format=%H", "--", file]).expect("git log");
            let history = String::from_utf8_lossy(&out.stdout);
            let last = history.lines().next().unwrap_or("");
            assert!(
                last.starts_with(&row.commit),
                "{SPEC}: the row {:?} names commit {}, but {file} was last changed in {last}",
                row.what,
                row.commit
            );
        }
    }
}
