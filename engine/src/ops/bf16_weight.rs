//! A frozen weight for bf16 products (`model.cpu_matmul: bf16`): W [out, in] rounded to bf16 and
//! packed twice (`kernels/bf16_pack.rs`), once for x W^T (the forward) and once for g W (the input
//! gradient), so that every product with it (training, scoring, generation) runs in bf16 with f32
//! sums: on Intel AMX (`kernels/amx.rs`) where the CPU has it, otherwise by AVX-512 or AVX2
//! (`kernels/bf16_dot/`: AVX512-BF16's dot products on AMD, f32 FMAs elsewhere). The adapters, norms,
//! attention and log-probs stay f32.

use candle_core::{DType, Device, Result, Tensor};

use crate::kernels::view::View;
#[cfg(x86_kernels)]
use crate::kernels::{amx, bf16_dot, bf16_pack::PackedB};

/// W [out, in] packed as the B operand of x W^T ([in, out]) and of g W ([out, in]); a merged
/// weight of generation (`plus_product`) packs only the first.
pub struct Bf16Weight {
    #[cfg(x86_kernels)]
    x_wt: PackedB,
    #[cfg(x86_kernels)]
    g_w: Option<PackedB>,
}

impl Bf16Weight {
    /// Whether this machine runs bf16 products: an x86-64 CPU with AVX2 and FMA (Intel Haswell and
    /// later, AMD Zen and later), by AVX-512 where the CPU has it and AMX where it has that.
    pub fn available() -> bool {
        #[cfg(x86_kernels)]
        return bf16_dot::available();
        #[cfg(not(x86_kernels))]
        false
    }

    /// Why `available` is false, for an error a person reads.
    pub fn unavailable_because() -> &'static str {
        match cfg!(x86_kernels) {
            true => "this CPU lacks AVX2 and FMA (Intel from Haswell and AMD from Zen have them)",
            false => {
                "bf16 products run on x86-64 CPUs only (with AVX2 and FMA, or AVX-512), in a \
                 build with the feature cpu-kernels (the default)"
            }
        }
    }

    /// Packs a frozen f32 weight W [out, in] on the CPU (either memory order).
    pub fn pack(w: &Tensor) -> Result<Self> {
        if !w.device().is_cpu() || w.dtype() != DType::F32 {
            candle_core::bail!(
                "bf16 products pack f32 weights on the CPU, and this weight is {} on {}: use \
                 model.dtype: f32 and model.device: cpu with model.cpu_matmul: bf16",
                w.dtype().as_str(),
                if w.device().is_cpu() {
                    "the CPU"
                } else {
                    "a GPU"
                }
            )
        }
        if !Self::available() {
            candle_core::bail!(
                "bf16 products do not run here: {}",
                Self::unavailable_because()
            )
        }
        #[cfg(x86_kernels)]
        {
            let (out, inp) = w.dims2()?;
            let (s, l) = w.storage_and_layout();
            let w = View::of_cpu(&s, l, "bf16 products")?;
            Ok(Bf16Weight {
                x_wt: PackedB::new(w.t(), inp, out),
                g_w: Some(PackedB::new(w, out, inp)),
            })
        }
        #[cfg(not(x86_kernels))]
        unreachable!("no bf16 products off x86-64")
    }

    /// W + scale B A for A [r, in] and B [out, r] (f32 on the CPU, any strides), packed for
    /// x W^T only: bf16(bf16(W) + scale B A), what a merged weight is with bf16 products
    /// (`LoraLinear::set_merged`).
    pub fn plus_product(&self, a: &Tensor, b: &Tensor, scale: f64) -> Result<Self> {
        let (inp, out) = self.dims();
        let (r, a_in) = a.dims2()?;
        let fits = |t: &Tensor| t.dtype() == DType::F32 && t.device().is_cpu();
        if a_in != inp || b.dims2()? != (out, r) || !fits(a) || !fits(b) {
            candle_core::bail!(
                "bf16 products: B {:?} A {:?} in {:?} cannot be added to a packed weight \
                 [{out}, {inp}]",
                b.dims(),
                a.dims(),
                a.dtype()
            )
        }
        #[cfg(x86_kernels)]
        {
            let ((sa, la), (sb, lb)) = (a.storage_and_layout(), b.storage_and_layout());
            let a = View::of_cpu(&sa, la, "bf16 products")?;
            let b = View::of_cpu(&sb, lb, "bf16 products")?;
            // x W^T's operand is W^T [in, out]; its addend scale A^T B^T.
            Ok(Bf16Weight {
                x_wt: self.x_wt.plus_product((a.t(), b.t()), r, scale as f32),
                g_w: None,
            })
        }
        #[cfg(not(x86_kernels))]
        unreachable!("no bf16 products off x86-64: {scale}")
    }

    /// x W^T ([rows, out]) for x [rows, in] (any strides).
    pub(super) fn x_wt(&self, x: View<f32>, rows: usize) -> Vec<f32> {
        #[cfg(x86_kernels)]
        return product(x, rows, &self.x_wt);
        #[cfg(not(x86_kernels))]
        {
            let _ = x;
            unreachable!("no bf16 products off x86-64 ({rows} rows)")
        }
    }

    /// g W ([rows, in]) for g [rows, out] (any strides); an error for a merged weight, which
    /// no backward reads.
    pub(super) fn g_w(&self, g: View<f32>, rows: usize) -> Result<Vec<f32>> {
        #[cfg(x86_kernels)]
        return match &self.g_w {
            Some(p) => Ok(product(g, rows, p)),
            None => candle_core::bail!("bf16 products: a merged weight has no backward pack"),
        };
        #[cfg(not(x86_kernels))]
        {
            let _ = g;
            unreachable!("no bf16 products off x86-64 ({rows} rows)")
        }
    }

    /// (in, out) of W.
    fn dims(&self) -> (usize, usize) {
        #[cfg(x86_kernels)]
        return self.x_wt.dims();
        #[cfg(not(x86_kernels))]
        unreachable!("no bf16 products off x86-64")
    }

    /// x W^T for x [rows, in] (forward) or g W for g [rows, out], f32 on the CPU, as a tensor
    /// (no graph).
    pub(super) fn product(&self, x: &Tensor, forward: bool) -> Result<Tensor> {
        let (rows, k) = x.dims2()?;
        let (inp, out) = self.dims();
        let (bk, n) = if forward { (inp, out) } else { (out, inp) };
        if k != bk || x.dtype() != DType::F32 || !x.device().is_cpu() {
            candle_core::bail!(
                "bf16 products: x {:?} in {:?} does not fit a packed weight [{out}, {inp}]",
                x.dims(),
                x.dtype()
            )
        }
        let (s, l) = x.storage_and_layout();
        let x = View::of_cpu(&s, l, "bf16 products")?;
        let y = if forward {
            self.x_wt(x, rows)
        } else {
            self.g_w(x, rows)?
        };
        Tensor::from_vec(y, (rows, n), &Device::Cpu)
    }
}

/// a b on AMX where the CPU has it, else by `bf16_dot` (its one loop on this CPU): one kernel for
/// every row count, so that a row's values do not depend on the other rows of its product.
#[cfg(x86_kernels)]
fn product(a: View<f32>, rows: usize, b: &PackedB) -> Vec<f32> {
    match amx::available() {
        true => amx::product(a, rows, b),
        false => bf16_dot::product(a, rows, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where bf16 products do not run (a CPU without AVX2 and FMA), packing fails and says why.
    #[test]
    fn packing_where_bf16_does_not_run_says_why() {
        if Bf16Weight::available() {
            return;
        }
        let w = Tensor::zeros((4, 32), DType::F32, &Device::Cpu).unwrap();
        let err = Bf16Weight::pack(&w)
            .err()
            .expect("no bf16 products here")
            .to_string();
        assert!(err.contains(Bf16Weight::unavailable_because()), "{err}");
    }

    /// bf16 products run in every build on every x86-64 CPU with AVX2 and FMA, the AVX2 build
    /// (without the feature `avx512`, which `scripts/test.sh` also tests) included.
    #[cfg(x86_kernels)]
    #[test]
    fn bf16_runs_wherever_avx2_does() {
        assert_eq!(
            Bf16Weight::available(),
            crate::kernels::isa::avx2() || crate::kernels::isa::avx512()
        );
    }
}
