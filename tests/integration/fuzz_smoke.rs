//! A short run of every fuzz target (tests/support/src/fuzz; the campaign is scripts/fuzz.sh):
//! a fixed number of inputs from a fixed seed, no panic and no broken promise, and at least one
//! input accepted and one rejected, so that a target that stopped checking anything fails here.
//! Inputs that load a model are fewer.

use std::path::Path;

use empathy_test_support::fuzz::{self, Budget, FuzzContext, TARGETS};

/// The random seed of every smoke run.
const SEED: u64 = 2;
/// Inputs of a target whose input loads a model, and of the others.
const MODEL_INPUTS: u64 = 80;
const OTHER_INPUTS: u64 = 300;

/// Runs target `name` for its smoke budget and checks the report.
fn smoke(name: &str) {
    let loads_model = TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{name} is not a fuzz target"))
        .1;
    let inputs = if loads_model {
        MODEL_INPUTS
    } else {
        OTHER_INPUTS
    };
    let out = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ctx = FuzzContext::new(repo, out.path().join("work"));
    let mut target = fuzz::build(name, &ctx).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let budget = Budget {
        max_inputs: inputs,
        max_seconds: 120.0,
    };
    let report = fuzz::run(&mut target, budget, SEED, out.path());
    let findings: Vec<String> = report
        .distinct
        .values()
        .map(|f| format!("{} x{}", f.message, f.count))
        .collect();
    assert!(findings.is_empty(), "{name}: {findings:#?}");
    assert_eq!(report.inputs, inputs, "{name}: {}", report.line());
    assert!(
        report.accepted > 0,
        "{name} accepted nothing: {:?}",
        report.top_rejections(3)
    );
    assert!(report.rejected > 0, "{name} rejected nothing");
}

/// One test per target, and a check that the list names every target.
macro_rules! smoke_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                smoke(stringify!($name));
            }
        )*

        #[test]
        fn every_target_has_a_smoke_test() {
            let tested = [$(stringify!($name)),*];
            let all: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
            assert_eq!(tested.to_vec(), all);
        }
    };
}

smoke_tests!(
    gguf,
    safetensors,
    hf_config,
    tokenizer,
    tokenizer_config,
    optimizer,
    checkpoint,
    episode_jsonl,
    scenario_yaml,
    persona_yaml,
    split_yaml,
    preset_yaml,
    speaker_yaml,
    policy_yaml,
    sweep_yaml,
    train_config,
    env_request,
    model_request,
);
