//! Unit tests of AdamW, pinned to hand-computed numbers.

use super::*;
use candle_core::Device;

fn cfg_plain() -> AdamWConfig {
    AdamWConfig {
        lr: 0.1,
        weight_decay: 0.01,
        max_grad_norm: None,
        ..AdamWConfig::default()
    }
}

fn grads_for(var: &Var, g: &[f32]) -> GradStore {
    let mut store = GradStore::default();
    let t = Tensor::new(g, &Device::Cpu).unwrap();
    store.insert(var.as_tensor(), t);
    store
}

/// Parameters a = [1, 2] and b = [3] under `cfg_plain`.
fn two_params() -> (Var, Var, AdamW) {
    let a = Var::new(&[1.0f32, 2.0], &Device::Cpu).unwrap();
    let b = Var::new(&[3.0f32], &Device::Cpu).unwrap();
    let vars = [("a".to_string(), a.clone()), ("b".to_string(), b.clone())];
    (a, b, AdamW::new(vars, cfg_plain()).unwrap())
}

/// Gradients `ga` for `a` and `gb` for `b`.
fn grads_for_two(a: &Var, ga: &[f32], b: &Var, gb: &[f32]) -> GradStore {
    let mut store = grads_for(a, ga);
    store.insert(b.as_tensor(), Tensor::new(gb, &Device::Cpu).unwrap());
    store
}

fn vec1(v: &Var) -> Vec<f32> {
    v.as_tensor().to_vec1().unwrap()
}

fn close(a: &[f32], b: &[f32], tol: f32) {
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < tol, "{a:?} vs {b:?}");
    }
}

#[test]
fn one_and_two_steps_match_hand_numbers() {
    let w = Var::new(&[1.0f32, -2.0], &Device::Cpu).unwrap();
    let mut opt = AdamW::new([("w".to_string(), w.clone())], cfg_plain()).unwrap();
    // Step 1, g = [0.5, -1]: decay theta * (1 - 0.1 * 0.01) = [0.999, -1.998];
    // m = 0.1 g = [0.05, -0.1]; v = 0.001 g^2 = [0.00025, 0.001];
    // m_hat = m / 0.1 = [0.5, -1]; sqrt(v_hat) = sqrt(v / 0.001) = [0.5, 1];
    // theta = [0.999 - 0.1 * 0.5 / 0.5, -1.998 + 0.1 * 1 / 1] = [0.899, -1.898].
    let out = opt.step(1.0, &grads_for(&w, &[0.5, -1.0])).unwrap();
    assert!(matches!(out, StepOutcome::Applied { step: 1, .. }));
    close(&vec1(&w), &[0.899, -1.898], 1e-6);
    // Step 2, g = [-0.5, 2]: decay [0.899 * 0.999, -1.898 * 0.999] = [0.898101, -1.896102];
    // m = 0.9 [0.05, -0.1] + 0.1 [-0.5, 2] = [-0.005, 0.11];
    // v = 0.999 [0.00025, 0.001] + 0.001 [0.25, 4] = [0.00049975, 0.004999];
    // bias corrections 1 - 0.9^2 = 0.19 and 1 - 0.999^2 = 0.001999:
    // m_hat = [-0.0263158, 0.5789474], sqrt(v_hat) = [0.5, sqrt(2.5007504) = 1.5813761];
    // steps 0.1 * [-0.0526316, 0.3661012] -> theta = [0.9033642, -1.9327124].
    opt.step(1.0, &grads_for(&w, &[-0.5, 2.0])).unwrap();
    close(&vec1(&w), &[0.903_364_2, -1.932_712_4], 1e-6);
    let st = opt.state().unwrap();
    assert_eq!(st.step, 2);
    close(&st.m["w"].to_vec1::<f32>().unwrap(), &[-0.005, 0.11], 1e-7);
    close(
        &st.v["w"].to_vec1::<f32>().unwrap(),
        &[0.000_499_75, 0.004_999],
        1e-9,
    );
}

#[test]
fn clipping_scales_gradients_and_reports_the_pre_clip_norm() {
    // g = [3, 4]: norm 5 > 1, coefficient 1 / (5 + 1e-6) = 0.2 (to 1e-7), clipped g = [0.6, 0.8];
    // m after one step = 0.1 * clipped g = [0.06, 0.08].
    let w = Var::new(&[0.0f32, 0.0], &Device::Cpu).unwrap();
    let cfg = AdamWConfig {
        max_grad_norm: Some(1.0),
        ..cfg_plain()
    };
    let mut opt = AdamW::new([("w".to_string(), w.clone())], cfg).unwrap();
    let out = opt.step(0.5, &grads_for(&w, &[3.0, 4.0])).unwrap();
    assert_eq!(out.grad_norm(), Some(5.0));
    assert!(matches!(out, StepOutcome::Applied { clipped: true, .. }));
    close(
        &opt.state().unwrap().m["w"].to_vec1::<f32>().unwrap(),
        &[0.06, 0.08],
        1e-7,
    );
    // Below the threshold nothing is scaled: norm 0.5, coefficient 1.
    assert_eq!(clip_coefficient(0.5, Some(1.0)), 1.0);
    assert_eq!(clip_coefficient(5.0, None), 1.0);
    assert!((clip_coefficient(5.0, Some(1.0)) - 1.0 / 5.000_001).abs() < 1e-15);
}

#[test]
fn the_norm_sums_every_parameter_and_no_parameters_give_zero() {
    let (a, b, mut opt) = two_params();
    // sqrt(0.25 + 1 + 4) = sqrt(5.25)
    let out = opt
        .step(1.0, &grads_for_two(&a, &[0.5, 1.0], &b, &[2.0]))
        .unwrap();
    assert_eq!(out.grad_norm(), Some(5.25f64.sqrt()));
    let mut none = AdamW::new(Vec::<(String, Var)>::new(), cfg_plain()).unwrap();
    let out = none.step(1.0, &GradStore::default()).unwrap();
    assert_eq!(out.grad_norm(), Some(0.0));
}

#[test]
fn warmup_scales_the_first_update() {
    // Warmup 4, lr 0.1: the first update uses 0.025. With weight decay 0 and g = [1], the first
    // Adam step is lr * 1 / (1 + 1e-8): theta 1 -> 0.975.
    let w = Var::new(&[1.0f32], &Device::Cpu).unwrap();
    let cfg = AdamWConfig {
        weight_decay: 0.0,
        schedule: LrSchedule::Constant { warmup_steps: 4 },
        ..cfg_plain()
    };
    let mut opt = AdamW::new([("w".to_string(), w.clone())], cfg).unwrap();
    assert!((opt.next_lr() - 0.025).abs() < 1e-15);
    let out = opt.step(0.0, &grads_for(&w, &[1.0])).unwrap();
    assert!(matches!(out, StepOutcome::Applied { lr, .. } if (lr - 0.025).abs() < 1e-15));
    close(&vec1(&w), &[0.975], 1e-7);
}

#[test]
fn non_finite_gradient_or_loss_skips_without_touching_anything() {
    let (a, b, mut opt) = two_params();
    let good = grads_for_two(&a, &[0.1, 0.2], &b, &[0.3]);
    opt.step(1.0, &good).unwrap();
    let before = (vec1(&a), vec1(&b), opt.state().unwrap());

    let bad = grads_for_two(&a, &[0.1, 0.2], &b, &[f32::NAN]);
    let out = opt.step(1.0, &bad).unwrap();
    assert_eq!(
        out,
        StepOutcome::Skipped(SkipReason::NonFiniteGrad { param: "b".into() })
    );
    let out = opt.step(f64::INFINITY, &good).unwrap();
    assert!(matches!(
        out,
        StepOutcome::Skipped(SkipReason::NonFiniteLoss(_))
    ));

    assert_eq!(vec1(&a), before.0);
    assert_eq!(vec1(&b), before.1);
    let after = opt.state().unwrap();
    assert_eq!(after.step, 1);
    for (k, m) in &before.2.m {
        assert_eq!(
            m.to_vec1::<f32>().unwrap(),
            after.m[k].to_vec1::<f32>().unwrap()
        );
        assert_eq!(
            before.2.v[k].to_vec1::<f32>().unwrap(),
            after.v[k].to_vec1::<f32>().unwrap()
        );
    }
}

/// A gradient that changes from step to step: d/dw sum(sin(3 w) + w^2) = 3 cos(3 w) + 2 w.
fn wavy_grads(w: &Var) -> (f64, GradStore) {
    let x = w.as_tensor();
    let loss = ((x * 3.0).unwrap().sin().unwrap() + x.sqr().unwrap())
        .unwrap()
        .sum_all()
        .unwrap();
    let value = loss.to_scalar::<f32>().unwrap() as f64;
    (value, loss.backward().unwrap())
}

fn bits(v: &Var) -> Vec<u32> {
    vec1(v).iter().map(|x| x.to_bits()).collect()
}

#[test]
fn save_load_step_equals_uninterrupted_bit_for_bit() {
    let dev = Device::Cpu;
    let init = [0.3f32, -1.2, 0.7, 2.1, -0.05];
    let cfg = AdamWConfig {
        lr: 0.05,
        max_grad_norm: Some(1.0),
        schedule: LrSchedule::Cosine {
            warmup_steps: 2,
            total_steps: 6,
        },
        ..AdamWConfig::default()
    };
    // Uninterrupted: 5 steps.
    let w = Var::new(&init, &dev).unwrap();
    let mut opt = AdamW::new([("layer.w".to_string(), w.clone())], cfg).unwrap();
    for _ in 0..5 {
        let (l, g) = wavy_grads(&w);
        opt.step(l, &g).unwrap();
    }
    // Interrupted: 2 steps, save weights and state, rebuild everything from bytes, 3 more steps.
    let w1 = Var::new(&init, &dev).unwrap();
    let mut opt1 = AdamW::new([("layer.w".to_string(), w1.clone())], cfg).unwrap();
    for _ in 0..2 {
        let (l, g) = wavy_grads(&w1);
        opt1.step(l, &g).unwrap();
    }
    let state_bytes = opt1.state().unwrap().to_bytes().unwrap();
    let weights = safetensors::serialize([("layer.w", w1.as_tensor())], None).unwrap();
    drop((opt1, w1));

    let loaded = candle_core::safetensors::load_buffer(&weights, &dev).unwrap();
    let w2 = Var::from_tensor(&loaded["layer.w"]).unwrap();
    let mut opt2 = AdamW::new([("layer.w".to_string(), w2.clone())], cfg).unwrap();
    let src = std::path::Path::new("optimizer.safetensors");
    opt2.load_state(AdamWState::from_bytes(&state_bytes, &dev, src).unwrap())
        .unwrap();
    assert_eq!(opt2.steps_done(), 2);
    for _ in 0..3 {
        let (l, g) = wavy_grads(&w2);
        opt2.step(l, &g).unwrap();
    }
    assert_eq!(bits(&w), bits(&w2));
    let (a, b) = (opt.state().unwrap(), opt2.state().unwrap());
    let mv = |s: &AdamWState| -> Vec<u32> {
        let mut out: Vec<f32> = s.m["layer.w"].to_vec1().unwrap();
        out.extend(s.v["layer.w"].to_vec1::<f32>().unwrap());
        out.iter().map(|x| x.to_bits()).collect()
    };
    assert_eq!(mv(&a), mv(&b));
}

#[test]
fn state_mismatches_and_missing_gradients_are_errors() {
    let dev = Device::Cpu;
    let w = Var::new(&[1.0f32, 2.0], &dev).unwrap();
    let mut opt = AdamW::new([("w".to_string(), w.clone())], cfg_plain()).unwrap();
    assert!(opt.step(1.0, &GradStore::default()).is_err());
    let other = Var::new(&[1.0f32, 2.0, 3.0], &dev).unwrap();
    let opt3 = AdamW::new([("w".to_string(), other)], cfg_plain()).unwrap();
    assert!(opt.load_state(opt3.state().unwrap()).is_err());
    let dup = [("w".to_string(), w.clone()), ("w".to_string(), w)];
    assert!(AdamW::new(dup, cfg_plain()).is_err());
    let src = std::path::Path::new("x.safetensors");
    assert!(AdamWState::from_bytes(b"not safetensors", &dev, src).is_err());
}

/// Parameters of three sizes, two of them shared, whose name order interleaves the sizes, so the
/// flat order (by size, then name) differs from the name order.
fn mixed_sizes() -> Vec<(String, Var)> {
    let dev = Device::Cpu;
    let var = |n: usize, seed: f32| {
        let vals: Vec<f32> = (0..n).map(|i| seed + 0.37 * i as f32 - 0.9).collect();
        Var::new(vals.as_slice(), &dev).unwrap()
    };
    vec![
        (
            "a".to_string(),
            Var::from_tensor(&var(6, 0.1).reshape((2, 3)).unwrap()).unwrap(),
        ),
        ("b".to_string(), var(3, -0.4)),
        (
            "c".to_string(),
            Var::from_tensor(&var(6, 0.8).reshape((3, 2)).unwrap()).unwrap(),
        ),
        ("d".to_string(), var(4, 0.25)),
        ("e".to_string(), var(3, 1.3)),
    ]
}

/// A copy of `vars` with fresh storage, so two optimizers can run side by side.
fn copy_of(vars: &[(String, Var)]) -> Vec<(String, Var)> {
    vars.iter()
        .map(|(n, v)| {
            (
                n.clone(),
                Var::from_tensor(&v.as_tensor().copy().unwrap()).unwrap(),
            )
        })
        .collect()
}

/// The loss sum(sin(3 w) + w^2) over every parameter and its gradients.
fn wavy_grads_all(vars: &[(String, Var)]) -> (f64, GradStore) {
    let mut loss = Tensor::new(0.0f32, &Device::Cpu).unwrap();
    for (_, w) in vars {
        let x = w.as_tensor();
        let term = ((x * 3.0).unwrap().sin().unwrap() + x.sqr().unwrap()).unwrap();
        loss = (loss + term.sum_all().unwrap()).unwrap();
    }
    let value = loss.to_scalar::<f32>().unwrap() as f64;
    (value, loss.backward().unwrap())
}

fn all_bits(vars: &[(String, Var)], s: &AdamWState) -> Vec<u32> {
    let mut out = Vec::new();
    for (n, v) in vars {
        for t in [v.as_tensor(), &s.m[n], &s.v[n]] {
            let t = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            out.extend(t.iter().map(|x| x.to_bits()));
        }
    }
    out
}

#[test]
fn one_chunk_for_all_and_one_per_parameter_give_the_same_bits() {
    let cfg = AdamWConfig {
        lr: 0.05,
        max_grad_norm: Some(0.5), // clips every step here
        schedule: LrSchedule::Cosine {
            warmup_steps: 1,
            total_steps: 6,
        },
        ..AdamWConfig::default()
    };
    let (flat_vars, own_vars) = (mixed_sizes(), mixed_sizes());
    let mut flat = AdamW::chunked(flat_vars.clone(), cfg, false).unwrap();
    let mut own = AdamW::chunked(own_vars.clone(), cfg, true).unwrap();
    assert_eq!((flat.chunks.len(), own.chunks.len()), (1, 5));
    for _ in 0..3 {
        let (l1, g1) = wavy_grads_all(&flat_vars);
        let (l2, g2) = wavy_grads_all(&own_vars);
        let (o1, o2) = (flat.step(l1, &g1).unwrap(), own.step(l2, &g2).unwrap());
        assert!(matches!(o1, StepOutcome::Applied { clipped: true, .. }));
        assert_eq!(o1, o2);
    }
    assert_eq!(
        all_bits(&flat_vars, &flat.state().unwrap()),
        all_bits(&own_vars, &own.state().unwrap())
    );
    // A chunk's state is copied out, not viewed: reading a view of a GPU tensor back copies its
    // whole storage.
    let state = flat.state().unwrap();
    for t in state.m.values().chain(state.v.values()) {
        assert_eq!(t.layout().start_offset(), 0);
    }
    // A non-finite gradient is reported by its parameter's name, not by its flat position.
    let (_, mut bad) = wavy_grads_all(&flat_vars);
    bad.insert(
        flat_vars[2].1.as_tensor(),
        Tensor::new(&[[1.0f32, f32::NAN], [0.0, 0.0], [0.0, 0.0]], &Device::Cpu).unwrap(),
    );
    let c = SkipReason::NonFiniteGrad { param: "c".into() };
    assert_eq!(flat.step(1.0, &bad).unwrap(), StepOutcome::Skipped(c));

    // Either layout resumes from the other's saved state (the same file format) bit for bit.
    let src = std::path::Path::new("optimizer.safetensors");
    for (from_flat, per_param) in [(true, true), (false, false)] {
        let (from, from_vars) = match from_flat {
            true => (&flat, &flat_vars),
            false => (&own, &own_vars),
        };
        let bytes = from.state().unwrap().to_bytes().unwrap();
        let vars = copy_of(from_vars);
        let mut resumed = AdamW::chunked(vars.clone(), cfg, per_param).unwrap();
        let state = AdamWState::from_bytes(&bytes, &Device::Cpu, src).unwrap();
        resumed.load_state(state).unwrap();
        let (l, g) = wavy_grads_all(&vars);
        resumed.step(l, &g).unwrap();
        let reference = copy_of(from_vars);
        let mut ahead = AdamW::chunked(reference.clone(), cfg, !per_param).unwrap();
        ahead.load_state(from.state().unwrap()).unwrap();
        let (l, g) = wavy_grads_all(&reference);
        ahead.step(l, &g).unwrap();
        assert_eq!(
            all_bits(&vars, &resumed.state().unwrap()),
            all_bits(&reference, &ahead.state().unwrap())
        );
    }
}

#[test]
fn parameters_of_two_dtypes_make_one_chunk_each_with_the_same_bits() {
    let vars = || {
        let a = Var::new(&[1.0f32, -2.0], &Device::Cpu).unwrap();
        let b = Var::new(&[0.5f64, 3.0, -1.0], &Device::Cpu).unwrap();
        let c = Var::new(&[0.25f32, 0.75], &Device::Cpu).unwrap();
        vec![
            ("a".to_string(), a),
            ("b".to_string(), b),
            ("c".to_string(), c),
        ]
    };
    let (flat_vars, own_vars) = (vars(), vars());
    let mut flat = AdamW::chunked(flat_vars.clone(), cfg_plain(), false).unwrap();
    let mut own = AdamW::chunked(own_vars.clone(), cfg_plain(), true).unwrap();
    assert_eq!((flat.chunks.len(), own.chunks.len()), (2, 3));
    let grads = |v: &[(String, Var)]| {
        let mut store = grads_for_two(&v[0].1, &[0.3, -0.1], &v[2].1, &[0.2, 0.4]);
        let gb = Tensor::new(&[0.1f64, -0.2, 0.3], &Device::Cpu).unwrap();
        store.insert(v[1].1.as_tensor(), gb);
        store
    };
    for _ in 0..2 {
        let (o1, o2) = (
            flat.step(1.0, &grads(&flat_vars)).unwrap(),
            own.step(1.0, &grads(&own_vars)).unwrap(),
        );
        assert_eq!(o1, o2);
    }
    let b: Vec<f64> = flat_vars[1].1.as_tensor().to_vec1().unwrap();
    assert_eq!(b, own_vars[1].1.as_tensor().to_vec1::<f64>().unwrap());
    for k in [0, 2] {
        assert_eq!(bits(&flat_vars[k].1), bits(&own_vars[k].1));
    }
}

#[test]
fn the_same_state_always_serializes_to_the_same_bytes() {
    let (a, b, mut opt) = two_params();
    opt.step(1.0, &grads_for_two(&a, &[0.1, 0.2], &b, &[0.3]))
        .unwrap();
    // Each call builds the metadata's HashMap anew, with a new random order.
    let first = opt.state().unwrap().to_bytes().unwrap();
    for _ in 0..16 {
        assert_eq!(opt.state().unwrap().to_bytes().unwrap(), first);
    }
    let src = std::path::Path::new("optimizer.safetensors");
    let back = AdamWState::from_bytes(&first, &Device::Cpu, src).unwrap();
    assert_eq!(back.step, 1);
    let m_b = opt.state().unwrap().m["b"].to_vec1::<f32>().unwrap();
    assert_eq!(back.m["b"].to_vec1::<f32>().unwrap(), m_b);
}
