//! `model.cpu_matmul: bf16` (LoadOptions::bf16_products): the frozen weights' products in bf16 (on
//! AMX where the CPU has it, otherwise by AVX-512). Against the f32 model:
//! the training pass's log-probs and adapter gradients stay close but are not the same bits (the
//! bf16 products ran), at many rows and at few; the scoring pass (Infer) agrees with the training
//! pass; the f32 projection weights are gone; generation runs, with the adapters merged. Without
//! AVX-512 the load fails and says so.

use anyhow::Result;
use candle_core::Tensor;
use empathy_engine::ops::Bf16Weight;
use empathy_gym::model::{AdapterMode, ChatModel, LoadOptions, Pass};

use super::{greedy, lora_opts, max_abs_diff, randomize_lora_b, tiny, user};
use crate::model_fixtures::TinySpec;

fn bf16_opts() -> LoadOptions {
    LoadOptions {
        bf16_products: true,
        ..lora_opts(4)
    }
}

/// Log-probs of `ids` under the training pass and the gradient of every adapter tensor.
fn train_pass(m: &ChatModel, ids: &[u32]) -> Result<(Tensor, Vec<Tensor>)> {
    let lp = m.token_logprobs(&[ids.to_vec()], AdapterMode::On, Pass::Train)?;
    let grads = lp.sum_all()?.backward()?;
    let g = m
        .trainable()
        .iter()
        .map(|(name, v)| {
            grads
                .get(v.as_tensor())
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("{name} has no gradient"))
        })
        .collect::<Result<_>>()?;
    Ok((lp, g))
}

/// |a - b| / |b| over all values of the tensors.
fn relative(a: &[Tensor], b: &[Tensor]) -> Result<f32> {
    let (mut num, mut den) = (0f32, 0f32);
    for (a, b) in a.iter().zip(b) {
        num += (a - b)?.sqr()?.sum_all()?.to_scalar::<f32>()?;
        den += b.sqr()?.sum_all()?.to_scalar::<f32>()?;
    }
    Ok((num / den).sqrt())
}

#[test]
fn bf16_products_track_f32_at_many_rows_and_at_few() -> Result<()> {
    if !Bf16Weight::available() {
        let err = tiny(TinySpec::llama(), &bf16_opts())
            .err()
            .expect("no AVX-512: the load fails");
        assert!(format!("{err:#}").contains("AVX-512"), "{err:#}");
        eprintln!("no AVX-512 on this CPU: bf16 products not run");
        return Ok(());
    }
    for spec in [TinySpec::llama(), TinySpec::qwen2()] {
        let (_d32, f32_model) = tiny(spec, &lora_opts(4))?;
        let (_d16, bf16_model) = tiny(spec, &bf16_opts())?;
        randomize_lora_b(&f32_model, 5)?;
        randomize_lora_b(&bf16_model, 5)?;
        let long =
            f32_model.encode_chat(&user(&"how are you holding up today? ".repeat(4)), true)?;
        assert!(long.len() > 34, "{} tokens", long.len());
        let (lp32, g32) = train_pass(&f32_model, &long)?;
        let (lp16, g16) = train_pass(&bf16_model, &long)?;
        let lp_diff = max_abs_diff(&lp16, &lp32)?;
        assert!(lp_diff > 0.0, "the bf16 products did not run");
        let g_rel = relative(&g16, &g32)?;
        eprintln!("bf16 against f32: log-probs {lp_diff}, gradients {g_rel}");
        // bf16 keeps 8 bits of mantissa: a bf16 copy of this model drifts up to 0.25
        // (model_formats.rs); rounding only the products' inputs stays well inside that.
        assert!(lp_diff < 0.15, "log-probs {lp_diff} apart");
        assert!(g_rel > 0.0 && g_rel < 0.05, "gradients {g_rel} apart");
        // The scoring pass (old and reference log-probs) runs the same products. The two passes'
        // f32 kernels differ in the last bits (1e-5 apart in f32), and where that flips a value's
        // rounding to bf16 it moves a product by up to 2^-8 of a term: closer than to f32, not
        // the same.
        let scored =
            bf16_model.token_logprobs(std::slice::from_ref(&long), AdapterMode::On, Pass::Infer)?;
        let scored_diff = max_abs_diff(&scored, &lp16)?;
        eprintln!("scoring against training {scored_diff}");
        assert!(
            scored_diff < lp_diff / 4.0,
            "scoring and training {scored_diff} apart"
        );
        // 32 rows and fewer (a decoding step's size) run the same kernel over the same packed
        // weights: close to f32 too, not its bits.
        let short = f32_model.encode("I hear you.")?;
        assert!(short.len() <= 32, "{} tokens", short.len());
        let (s32, sg32) = train_pass(&f32_model, &short)?;
        let (s16, sg16) = train_pass(&bf16_model, &short)?;
        let s_diff = max_abs_diff(&s16, &s32)?;
        let sg_rel = relative(&sg16, &sg32)?;
        assert!(
            s_diff > 0.0 && s_diff < 0.15,
            "few rows: log-probs {s_diff} apart"
        );
        assert!(
            sg_rel > 0.0 && sg_rel < 0.05,
            "few rows: gradients {sg_rel} apart"
        );
        // Packing dropped the f32 projection weights (every value above came from the packs):
        // the merged weight, which export needs, is refused and the message says what to do.
        for (name, p) in bf16_model.model.blocks()[0].projections() {
            assert_eq!(
                p.weight().stride(),
                [0, 0],
                "{name}: a stand-in, no storage"
            );
            let err = p.merged_weight().expect_err(name).to_string();
            assert!(
                err.contains("load the model with f32 products"),
                "{name}: {err}"
            );
        }
        // Generation decodes with the adapters merged into the packs (`Llama::decodes_merged`),
        // as on a GPU; the f32 CPU model decodes through them.
        assert!(bf16_model.model.decodes_merged());
        assert!(!f32_model.model.decodes_merged());
        // Generation (the prefill at many rows, decoding steps at few) runs.
        let g = bf16_model.generate(&[long.clone(), long], &[1, 2], &greedy(6))?;
        assert!(g.iter().all(|x| x.tokens.len() == 6 || x.stopped), "{g:?}");
        assert_eq!(g[0].tokens, g[1].tokens, "rows of a batch are independent");
    }
    Ok(())
}
