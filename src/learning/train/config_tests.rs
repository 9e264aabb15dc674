//! Unit tests of the training config: defaults, overrides, errors that name the file and field.

use super::*;
use crate::learning::credit::AdvantageScale;
use crate::learning::optimize::LrSchedule;

fn load(text: &str, sets: &[&str]) -> Result<TrainConfig> {
    let sets: Vec<Override> = sets.iter().map(|s| Override::parse(s).unwrap()).collect();
    TrainConfig::from_yaml(text, Path::new("cfg.yaml"), &sets)
}

/// The error of a config the check refuses, after asserting that it names the file and `field`.
fn refused(text: &str, sets: &[&str], field: &str) -> String {
    let err = load(text, sets).unwrap_err().to_string();
    assert!(err.starts_with(&format!("cfg.yaml: {field}:")), "{err}");
    err
}

#[test]
fn empty_file_gives_the_documented_defaults() {
    let c = load("", &[]).unwrap();
    let f = &c.file;
    assert_eq!(f.run, "run");
    assert_eq!(c.run_dir, PathBuf::from("results/run"));
    assert_eq!(
        (f.grpo.steps, f.grpo.profiles_per_step, f.grpo.group_size),
        (100, 4, 4)
    );
    assert_eq!(f.grpo.iterations, 1);
    assert_eq!(f.grpo.advantage_scale, AdvantageScale::Group);
    assert_eq!(
        (f.grpo.loss.eps_low, f.grpo.loss.eps_high, f.grpo.loss.beta),
        (0.2, 0.28, 0.0)
    );
    assert_eq!(f.lora.rank, 16);
    assert_eq!(f.optim.lr, 1e-5);
    assert_eq!(c.sampling.max_new_tokens, 96);
    assert_eq!(c.model_path, default_policy_path());
    assert_eq!(c.batch_size(), 16);
    assert_eq!(f.algorithm, crate::learning::credit::Algorithm::Grpo);
    assert_eq!(f.grpo.credit, crate::learning::credit::Credit::Episode);
    assert_eq!(
        f.grpo.loss.kind,
        crate::learning::optimize::PolicyLoss::Clip
    );
    assert_eq!(f.grpo.dynamic_sampling_draws, 0);
    assert_eq!(
        (
            f.ppo.gamma,
            f.ppo.lambda,
            f.ppo.cliprange_value,
            f.ppo.critic_warmup
        ),
        (1.0, 1.0, 0.5, 0)
    );
}

#[test]
fn algorithm_is_an_enum_and_unknown_words_name_the_choices() {
    let c = load("algorithm: reinforce_pp\n", &[]).unwrap();
    assert_eq!(
        c.file.algorithm,
        crate::learning::credit::Algorithm::ReinforcePp
    );
    let c = load("algorithm: grpo\ngrpo:\n  credit: turn\n", &[]).unwrap();
    assert_eq!(c.file.grpo.credit, crate::learning::credit::Credit::Turn);
    let err = load("algorithm: dpo\n", &[]).unwrap_err().to_string();
    assert!(
        err.contains("grpo") && err.contains("reinforce_pp"),
        "{err}"
    );
}

#[test]
fn turn_credit_is_refused_outside_grpo_with_what_to_use() {
    // estimate() reads grpo.credit only for grpo: with the others `turn` would do nothing.
    for (algorithm, why) in [
        ("ppo", "GAE"),
        ("reinforce_pp", "discounted return-to-go"),
        ("rloo", "leave-one-out"),
    ] {
        let text = format!("algorithm: {algorithm}\ngrpo:\n  credit: turn\n");
        let err = refused(&text, &[], "grpo.credit");
        assert!(
            err.contains(&format!("{algorithm} ignores it"))
                && err.contains(why)
                && err.contains("env.aggregate: dense"),
            "{err}"
        );
        // Through --set too, and `episode` (the default) stays accepted.
        let base = format!("algorithm: {algorithm}\n");
        assert!(load(&base, &["grpo.credit=turn"]).is_err());
        assert!(load(&base, &["grpo.credit=episode"]).is_ok());
    }
}

#[test]
fn overrides_apply_before_validation_and_resolve_round_trips() {
    let text = "run: quick\ngrpo:\n  steps: 5\noptim:\n  lr: 0.001\n";
    let c = load(
        text,
        &[
            "grpo.steps=7",
            "optim.schedule={kind: constant, warmup_steps: 2}",
        ],
    )
    .unwrap();
    assert_eq!(c.file.grpo.steps, 7);
    assert_eq!(
        c.file.optim.schedule,
        LrSchedule::Constant { warmup_steps: 2 }
    );
    assert_eq!(c.run_dir, PathBuf::from("results/quick"));
    // The resolved YAML parses back to the same configuration.
    let back = load(&c.to_yaml().unwrap(), &[]).unwrap();
    assert_eq!(back, c);
}

#[test]
fn bad_values_name_the_file_and_field() {
    let cases = [
        ("grpo:\n  group_size: 1\n", vec![], "grpo.group_size"),
        ("", vec!["sampling.temperature=0"], "sampling.temperature"),
        ("", vec!["run=../x"], "run"),
        ("", vec!["optim.lr=-1"], "optim.lr"),
        ("", vec!["lora.rank=0"], "lora"),
        ("", vec!["grpo.loss.beta=-0.1"], "grpo.loss.beta"),
        ("", vec!["ppo.lambda=1.5"], "ppo.lambda"),
        ("", vec!["ppo.cliprange_value=0"], "ppo.cliprange_value"),
        (
            "algorithm: ppo\n",
            vec!["ppo.critic_warmup=100"],
            "ppo.critic_warmup",
        ),
        (
            "",
            vec!["stability.entropy_frac=2"],
            "stability.entropy_frac",
        ),
        ("", vec!["env.auto.gain=0.5"], "env.auto"),
        (
            "env:\n  difficulty: auto\n",
            vec!["env.auto.smoothing=0"],
            "env.auto",
        ),
    ];
    for (text, sets, field) in cases {
        refused(text, &sets, field);
    }
    // Unknown keys, in the file or through --set, are rejected.
    let err = load("grpo:\n  stepz: 3\n", &[]).unwrap_err().to_string();
    assert!(err.contains("unknown field `stepz`"), "{err}");
    let err = load("", &["grpo.stepz=3"]).unwrap_err().to_string();
    assert!(
        err.contains("unknown field `stepz`") && err.contains("--set"),
        "{err}"
    );
    let err = load("grpo: [1\n", &[]).unwrap_err().to_string();
    assert!(err.starts_with("cfg.yaml: line"), "{err}");
}

#[test]
fn auto_difficulty_writes_its_controller_settings_out() {
    let c = load("env:\n  difficulty: auto\n", &["env.auto.gain=0.5"]).unwrap();
    let auto = c.file.env.auto.unwrap();
    assert_eq!((auto.gain, auto.target_emotion), (0.5, 50.0));
    assert!(c.to_yaml().unwrap().contains("difficulty: auto"));
    let c = load("env:\n  difficulty: auto\n", &[]).unwrap();
    assert_eq!(c.file.env.auto, Some(AutoSettings::default()));
    assert!(!load("", &[]).unwrap().to_yaml().unwrap().contains("auto"));
}

#[test]
fn simulator_section_defaults_choices_and_errors() {
    use crate::environment::sim::SimulatorKind;
    let c = load("", &[]).unwrap();
    assert_eq!(c.file.simulator.kind, SimulatorKind::Appraiser);
    assert_eq!(c.file.simulator.config, None);
    assert!(c
        .to_yaml()
        .unwrap()
        .contains("simulator:\n  kind: appraiser\n  config: null\n  device: null\n"));
    let c = load("simulator:\n  device: cpu\n", &[]).unwrap();
    assert_eq!(
        c.file.simulator.device,
        Some(crate::learning::train::config_file::DeviceKind::Cpu)
    );
    assert_eq!(load(&c.to_yaml().unwrap(), &[]).unwrap(), c);
    // The shipped LLM settings file (tests run in the crate root), in the file or by --set.
    let text = "simulator:\n  kind: llm\n  config: configs/simulator/llm.yaml\n";
    let c = load(text, &[]).unwrap();
    assert_eq!(c.file.simulator.kind, SimulatorKind::Llm);
    assert_eq!(
        c.file.simulator.config.as_deref(),
        Some(Path::new("configs/simulator/llm.yaml"))
    );
    assert_eq!(load(&c.to_yaml().unwrap(), &[]).unwrap(), c);
    let c = load("", &["simulator.kind=llm"]).unwrap();
    assert_eq!(
        (c.file.simulator.kind, c.file.simulator.config),
        (SimulatorKind::Llm, None)
    );
    // Unknown keys and kinds are rejected; bad values name the file and the field.
    let err = load("simulator:\n  kind: llm\n  base_url: http://x\n", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `base_url`"), "{err}");
    let err = load("simulator:\n  kind: gpt\n", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("appraiser") && err.contains("llm"), "{err}");
    for (text, why) in [
        (
            "simulator:\n  config: configs/simulator/llm.yaml\n",
            "kind is appraiser",
        ),
        (
            "simulator:\n  kind: llm\n  config: no/such.yaml\n",
            "is not a file",
        ),
    ] {
        let err = refused(text, &[], "simulator.config");
        assert!(err.contains(why), "{err}");
    }
    let err = refused(
        "simulator:\n  kind: llm\n  device: cuda\n",
        &[],
        "simulator.device",
    );
    assert!(err.contains("embeds nothing"), "{err}");
}

#[test]
fn cpu_matmul_bf16_is_read_and_refused_with_bf16_weights_or_a_gpu() {
    let c = load("model:\n  cpu_matmul: bf16\n", &[]).unwrap();
    assert_eq!(c.file.model.cpu_matmul, CpuMatmul::Bf16);
    let written = serde_yaml::to_string(&c.file).unwrap();
    assert!(written.contains("cpu_matmul: bf16"), "{written}");
    // The default is left out of a written config (runs without it keep their files).
    let default = serde_yaml::to_string(&load("", &[]).unwrap().file).unwrap();
    assert!(!default.contains("cpu_matmul"), "{default}");
    for (model, names) in [
        (
            "model:\n  cpu_matmul: bf16\n  dtype: bf16\n",
            "model.dtype: f32",
        ),
        (
            "model:\n  cpu_matmul: bf16\n  device: cuda\n",
            "model.dtype: bf16",
        ),
    ] {
        let err = refused(model, &[], "model.cpu_matmul");
        assert!(err.contains(names), "{err}");
    }
    let err = load("model:\n  cpu_matmul: fp8\n", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("f32") && err.contains("bf16"), "{err}");
}

#[test]
fn knob_overrides_outside_their_range_are_refused_at_load() {
    // A NaN passed every later check by failing its comparisons, and did not read back equal.
    refused(
        "env:\n  knobs:\n    acceptance: .nan\n",
        &[],
        "env.knobs.acceptance",
    );
    refused("", &["env.knobs.max_turns=0"], "env.knobs.max_turns");
    refused("", &["env.knobs.hint_rate=1.5"], "env.knobs.hint_rate");
    load("", &["env.knobs.acceptance=0.4", "env.knobs.quantum=5"]).unwrap();
}
