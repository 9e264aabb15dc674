//! Forward + backward time of the training ops against candle's differentiable alternatives, at
//! SmolLM2-135M sizes for 1 x 256 tokens on CPU: `frozen_matmul` vs plain matmul for one MLP
//! projection ([256, 576] x [1536, 576]^T; plain matmul's backward also computes the [1536, 576]
//! weight gradient that LoRA throws away), `softmax_train` vs `candle_nn::ops::softmax` on one
//! layer's attention scores, `rms_norm_train` vs `rms_norm_slow`, `rope_train` vs `rope_i_slow`,
//! `target_logprobs` vs the composition of candle ops it replaced, on the logits of one
//! 512-token sequence ([512, 49152]), and `attention_train` vs matmul + mask + softmax_train +
//! matmul on one layer's attention at 4 x 512 tokens (3 KV heads, 3 query heads each). At
//! inference, `linear_infer` vs candle's matmul for a prefill's 32-128 rows through the 30 layers'
//! column-major gate projections (out of cache, as in a forward): where the few-rows op of
//! `ops/skinny.rs` stops paying (`skinny::max_rows`).

use candle_core::{DType, Device, Tensor, Var};
use criterion::{criterion_group, criterion_main, Criterion};
use empathy_engine::ops::{
    attention_probs_composed, attention_train, frozen_matmul, linear_infer, merge_heads,
    rms_norm_train, rope_train, softmax_train, target_logprobs, target_logprobs_composed,
};

fn inputs() -> anyhow::Result<(Var, Tensor)> {
    let dev = Device::Cpu;
    let x = Var::from_tensor(&Tensor::rand(-1f32, 1f32, (256, 576), &dev)?)?;
    let w = Tensor::rand(-1f32, 1f32, (1536, 576), &dev)?.to_dtype(DType::F32)?;
    Ok((x, w))
}

fn bench_matmul(c: &mut Criterion) {
    let (x, w) = inputs().expect("bench inputs");
    let mut group = c.benchmark_group("fwd+bwd [256,576]x[1536,576]^T");
    group.bench_function("plain matmul", |b| {
        b.iter(|| {
            let y = x.as_tensor().matmul(&w.t().expect("t")).expect("matmul");
            let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
            grads.get(&x).expect("x grad").dims().len()
        })
    });
    group.bench_function("frozen_matmul", |b| {
        b.iter(|| {
            let y = frozen_matmul(&x, &w, None).expect("frozen_matmul");
            let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
            grads.get(&x).expect("x grad").dims().len()
        })
    });
    group.finish();
}

fn bench_softmax(c: &mut Criterion) {
    // Attention scores of one layer at 1 x 256 tokens: [1, 9 heads, 256, 256].
    let s =
        Var::from_tensor(&Tensor::rand(-4f32, 4f32, (1, 9, 256, 256), &Device::Cpu).expect("s"))
            .expect("var");
    let r = Tensor::rand(0f32, 1f32, (1, 9, 256, 256), &Device::Cpu).expect("r");
    let mut group = c.benchmark_group("softmax fwd+bwd [1,9,256,256]");
    group.bench_function("candle_nn::ops::softmax", |b| {
        b.iter(|| {
            let y = candle_nn::ops::softmax(&s, candle_core::D::Minus1).expect("softmax");
            let grads = (y * &r)
                .and_then(|y| y.sum_all()?.backward())
                .expect("backward");
            grads.get(&s).expect("grad").dims().len()
        })
    });
    group.bench_function("softmax_train", |b| {
        b.iter(|| {
            let y = softmax_train(&s).expect("softmax_train");
            let grads = (y * &r)
                .and_then(|y| y.sum_all()?.backward())
                .expect("backward");
            grads.get(&s).expect("grad").dims().len()
        })
    });
    group.finish();
}

fn bench_norm_rope(c: &mut Criterion) {
    let dev = Device::Cpu;
    let h =
        Var::from_tensor(&Tensor::rand(-1f32, 1f32, (1, 256, 576), &dev).expect("h")).expect("var");
    let w = Tensor::rand(0.5f32, 1.5f32, 576, &dev).expect("w");
    let q = Var::from_tensor(&Tensor::rand(-1f32, 1f32, (1, 9, 256, 64), &dev).expect("q"))
        .expect("var");
    let angles = Tensor::rand(0f32, 3f32, (256, 32), &dev).expect("angles");
    let (cos, sin) = (angles.cos().expect("cos"), angles.sin().expect("sin"));
    let mut group = c.benchmark_group("norm and rope fwd+bwd");
    group.bench_function("rms_norm_train [1,256,576]", |b| {
        b.iter(|| {
            let y = rms_norm_train(&h, &w, 1e-5).expect("rms_norm_train");
            let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
            grads.get(&h).expect("grad").dims().len()
        })
    });
    group.bench_function("candle_nn::ops::rms_norm_slow [1,256,576]", |b| {
        b.iter(|| {
            let y = candle_nn::ops::rms_norm_slow(&h, &w, 1e-5).expect("rms_norm_slow");
            let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
            grads.get(&h).expect("grad").dims().len()
        })
    });
    group.bench_function("candle_nn rope_i_slow [1,9,256,64]", |b| {
        b.iter(|| {
            let y = candle_nn::rotary_emb::rope_i_slow(&q, &cos, &sin).expect("rope_i_slow");
            let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
            grads.get(&q).expect("grad").dims().len()
        })
    });
    for interleaved in [true, false] {
        let name = format!("rope_train [1,9,256,64] interleaved={interleaved}");
        group.bench_function(name, |b| {
            b.iter(|| {
                let y = rope_train(&q, &cos, &sin, interleaved, 1.0).expect("rope_train");
                let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
                grads.get(&q).expect("grad").dims().len()
            })
        });
    }
    group.finish();
}

fn bench_logprob(c: &mut Criterion) {
    let dev = Device::Cpu;
    let logits = Var::from_tensor(
        &(Tensor::randn(0f32, 1f32, (512, 49152), &dev).expect("logits") * 3.0).expect("scale"),
    )
    .expect("var");
    let targets = Tensor::arange(0u32, 512, &dev).expect("targets");
    let mut group = c.benchmark_group("token log-prob fwd+bwd [512, 49152]");
    group.sample_size(20);
    group.bench_function("target_logprobs (custom op)", |b| {
        b.iter(|| {
            let y = target_logprobs(&logits, &targets).expect("target_logprobs");
            let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
            grads.get(&logits).expect("grad").dims().len()
        })
    });
    group.bench_function("composition of candle ops", |b| {
        b.iter(|| {
            let y = target_logprobs_composed(&logits, &targets).expect("composed");
            let grads = y.sum_all().and_then(|s| s.backward()).expect("backward");
            grads.get(&logits).expect("grad").dims().len()
        })
    });
    group.finish();
}

fn bench_attention(c: &mut Criterion) {
    // One layer of the 4 x 512 training case: q [4, 3 KV heads, 3 x 512, 64], k [4, 3, 512, 64].
    let dev = Device::Cpu;
    let rand = |dims: (usize, usize, usize, usize)| {
        Var::from_tensor(&Tensor::rand(-1f32, 1f32, dims, &dev).expect("rand")).expect("var")
    };
    let (q, k, v) = (
        rand((4, 3, 1536, 64)),
        rand((4, 3, 512, 64)),
        rand((4, 3, 512, 64)),
    );
    let r = Tensor::rand(0f32, 1f32, (4, 512, 576), &dev).expect("r");
    let mask = empathy_engine::block::causal_mask(512, &dev).expect("mask");
    let mut group = c.benchmark_group("attention fwd+bwd, q [4,3,1536,64], k and v [4,3,512,64]");
    group.sample_size(10);
    let mut case = |name: &str, f: &dyn Fn() -> Tensor| {
        group.bench_function(name, |b| {
            b.iter(|| {
                let grads = (f() * &r)
                    .and_then(|y| y.sum_all()?.backward())
                    .expect("backward");
                grads.get(&q).expect("grad").dims().len()
            })
        });
    };
    case("attention_train (one op)", &|| {
        attention_train(&q, &k, &v, &mask).expect("op")
    });
    case("matmul + mask + softmax_train + matmul", &|| {
        attention_probs_composed(&q, &k, &mask.reshape((512, 512)).expect("mask"))
            .and_then(|p| merge_heads(&p.matmul(&v)?, 512))
            .expect("comp")
    });
    group.finish();
}

fn bench_linear_infer(c: &mut Criterion) {
    let dev = Device::Cpu;
    // 30 gate projections [1536, 576], stored column-major as `LoraLinear` stores them on the CPU.
    let ws: Vec<Tensor> = (0..30)
        .map(|_| Tensor::rand(-1f32, 1f32, (576, 1536), &dev)?.t())
        .collect::<candle_core::Result<_>>()
        .expect("weights");
    let mut group = c.benchmark_group("inference x [m, 576] @ 30 column-major [1536, 576]^T");
    for m in [32, 64, 96, 128] {
        let x = Tensor::rand(-1f32, 1f32, (m, 576), &dev).expect("x");
        group.bench_function(format!("linear_infer, {m} rows"), |b| {
            b.iter(|| {
                ws.iter()
                    .map(|w| linear_infer(&x, w, None).expect("linear_infer").dims()[1])
                    .sum::<usize>()
            })
        });
        group.bench_function(format!("candle matmul, {m} rows"), |b| {
            b.iter(|| {
                ws.iter()
                    .map(|w| x.matmul(&w.t().expect("t")).expect("matmul").dims()[1])
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_linear_infer,
    bench_attention,
    bench_matmul,
    bench_softmax,
    bench_norm_rope,
    bench_logprob
);
criterion_main!(benches);
