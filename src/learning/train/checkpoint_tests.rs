//! Unit tests of atomic checkpoints: round trip, crash leftovers, corrupt pointers.

use super::*;
use crate::learning::optimize::adamw::{AdamW, AdamWConfig};
use candle_core::Var;
use rand::RngCore;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn sample(step: u64, fill: f32) -> Checkpoint {
    let dev = Device::Cpu;
    let a = Tensor::new(&[[fill, -fill], [0.5, f32::MIN_POSITIVE]], &dev).unwrap();
    let b = Tensor::new(&[1.0f32 / 3.0], &dev).unwrap();
    let var = Var::new(&[0.1f32, 0.2], &dev).unwrap();
    let opt = AdamW::new([("a".to_string(), var)], AdamWConfig::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(step);
    rng.next_u32();
    Checkpoint {
        step,
        adapters: [("layer.0.lora_a".to_string(), a), ("b".to_string(), b)]
            .into_iter()
            .collect(),
        optimizer: opt.state().unwrap(),
        rngs: [("sampler".to_string(), RngState::capture(&rng))]
            .into_iter()
            .collect(),
        meta: serde_json::json!({"run": "test", "config_hash": "abc"}),
        critic: None,
    }
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn round_trip_is_exact() {
    let run = tempfile::tempdir().unwrap();
    assert_eq!(latest_checkpoint(run.path()).unwrap(), None);
    let ck = sample(3, 1.25);
    let dir = save_checkpoint(run.path(), &ck).unwrap();
    assert_eq!(dir, run.path().join("checkpoints").join("step-3"));
    assert_eq!(latest_checkpoint(run.path()).unwrap(), Some(dir.clone()));
    let back = load_checkpoint(&dir, &Device::Cpu).unwrap();
    assert_eq!(back.step, 3);
    assert_eq!(back.meta, ck.meta);
    assert_eq!(back.rngs, ck.rngs);
    assert_eq!(back.adapters.len(), 2);
    for (k, t) in &ck.adapters {
        assert_eq!(bits(&back.adapters[k]), bits(t), "{k}");
    }
    assert_eq!(back.optimizer.step, 0);
    assert_eq!(bits(&back.optimizer.m["a"]), bits(&ck.optimizer.m["a"]));
    assert!(back.critic.is_none());
    assert!(!dir.join(CRITIC_FILE).exists());
    // No temp names remain after a clean save.
    let names: Vec<String> = fs::read_dir(checkpoints_dir(run.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.contains(".tmp-") && !n.contains(".old-")),
        "{names:?}"
    );
}

#[test]
fn crash_mid_write_leaves_the_previous_checkpoint_latest() {
    let run = tempfile::tempdir().unwrap();
    let first = save_checkpoint(run.path(), &sample(1, 1.0)).unwrap();
    // A save of step 2 that died half-way: temp dir with a truncated adapters file, no state, no
    // rename, plus a half-written pointer temp file.
    let dir = checkpoints_dir(run.path());
    let tmp = dir.join("step-2.tmp-99999");
    fs::create_dir(&tmp).unwrap();
    fs::write(tmp.join(ADAPTERS_FILE), b"\x08\x00\x00").unwrap();
    fs::write(dir.join("latest.tmp-99999"), b"step-").unwrap();
    assert_eq!(latest_checkpoint(run.path()).unwrap(), Some(first.clone()));
    let back = load_checkpoint(&first, &Device::Cpu).unwrap();
    assert_eq!(back.step, 1);

    // Leftovers are removed on request; real checkpoints stay.
    let removed = remove_leftovers(run.path()).unwrap();
    assert_eq!(removed, vec![dir.join("latest.tmp-99999"), tmp]);
    assert!(first.join(STATE_FILE).is_file());

    // A crash after the directory rename but before the pointer update leaves a complete step-2
    // that `latest` does not name; the next save of step 2 replaces it.
    fs::create_dir(dir.join("step-2")).unwrap();
    fs::write(dir.join("step-2").join("stale"), b"x").unwrap();
    assert_eq!(latest_checkpoint(run.path()).unwrap(), Some(first));
    let second = save_checkpoint(run.path(), &sample(2, 2.0)).unwrap();
    assert!(!second.join("stale").exists());
    assert_eq!(latest_checkpoint(run.path()).unwrap(), Some(second.clone()));
    let back = load_checkpoint(&second, &Device::Cpu).unwrap();
    assert_eq!(
        back.adapters["layer.0.lora_a"].to_vec2::<f32>().unwrap()[0][0],
        2.0
    );
}

#[test]
fn corrupt_or_dangling_pointer_is_a_clear_error() {
    let run = tempfile::tempdir().unwrap();
    save_checkpoint(run.path(), &sample(5, 1.0)).unwrap();
    let pointer = checkpoints_dir(run.path()).join(LATEST_FILE);
    fs::write(&pointer, b"\x00\xffgarbage").unwrap();
    let msg = latest_checkpoint(run.path()).unwrap_err().to_string();
    assert!(
        msg.contains("latest") && msg.contains("corrupt checkpoint pointer"),
        "{msg}"
    );
    fs::write(&pointer, b"step-9\n").unwrap();
    let msg = latest_checkpoint(run.path()).unwrap_err().to_string();
    assert!(
        msg.contains("step-9") && msg.contains("missing or incomplete"),
        "{msg}"
    );
    // Pointing it back at a real checkpoint repairs it.
    fs::write(&pointer, b"step-5").unwrap();
    assert!(latest_checkpoint(run.path()).unwrap().is_some());
}

#[test]
fn damaged_state_file_names_the_file() {
    let run = tempfile::tempdir().unwrap();
    let dir = save_checkpoint(run.path(), &sample(1, 1.0)).unwrap();
    fs::write(dir.join(STATE_FILE), b"{\"schema\": 3").unwrap();
    let msg = load_checkpoint(&dir, &Device::Cpu).unwrap_err().to_string();
    assert!(msg.contains(STATE_FILE) && msg.contains("damaged"), "{msg}");
}

#[test]
fn leftover_names() {
    assert!(is_leftover("step-3.tmp-123"));
    assert!(is_leftover("step-3.old-9"));
    assert!(is_leftover("latest.tmp-1"));
    assert!(!is_leftover("step-3"));
    assert!(!is_leftover("latest"));
    assert!(!is_leftover("notes.tmp-1"));
    assert_eq!(parse_step_name("step-12"), Some(12));
    assert_eq!(parse_step_name("step-"), None);
    assert_eq!(parse_step_name("step-+1"), None);
}

#[test]
fn critic_round_trips_when_present() {
    let run = tempfile::tempdir().unwrap();
    let mut ck = sample(2, 0.75);
    let head = Tensor::new(&[[0.25f32], [-1.0e-7]], &Device::Cpu).unwrap();
    let var = Var::new(&[0.3f32], &Device::Cpu).unwrap();
    let opt = AdamW::new(
        [("critic.value_head.bias".to_string(), var)],
        AdamWConfig::default(),
    )
    .unwrap();
    ck.critic = Some(CriticState {
        tensors: [("critic.value_head.weight".to_string(), head.clone())]
            .into_iter()
            .collect(),
        optimizer: opt.state().unwrap(),
    });
    let dir = save_checkpoint(run.path(), &ck).unwrap();
    let back = load_checkpoint(&dir, &Device::Cpu).unwrap();
    let c = back.critic.expect("the critic comes back");
    assert_eq!(bits(&c.tensors["critic.value_head.weight"]), bits(&head));
    assert!(c.optimizer.m.contains_key("critic.value_head.bias"));
    // The policy's adapters file holds no critic tensor (export reads it alone).
    assert_eq!(back.adapters.len(), 2);
}
