//! `x @ w^T` as a custom op whose backward returns the gradient of x only (see `super::frozen_matmul`).
//!
//! The forward calls the backend's own matmul through `BackendStorage`, so CPU and CUDA run the
//! same kernels as `Tensor::matmul`; only the backward differs (no weight gradient). With a
//! packed weight (`Bf16Weight`), both products are bf16 products.

use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CudaStorage, CustomOp2, DType, Layout, Result, Shape, Tensor};

use super::bf16_weight::Bf16Weight;
use crate::kernels::view::View;

/// Custom op computing `x @ w^T` for x [m, k] and w [n, k] with the backend's matmul, or in bf16
/// products when w is packed; its backward returns the gradient for x only.
pub(super) struct FrozenMatmul(pub(super) Option<Arc<Bf16Weight>>);

/// What a backend matmul needs: (batch, m, n, k), the layout of w^T and the output shape.
type MatmulPlan = ((usize, usize, usize, usize), Layout, Shape);

impl FrozenMatmul {
    /// (batch, m, n, k) and the layout of w^T, checked against the two input layouts.
    fn plan(l1: &Layout, l2: &Layout) -> Result<MatmulPlan> {
        let (m, k) = l1.shape().dims2()?;
        let (n, k2) = l2.shape().dims2()?;
        if k != k2 {
            candle_core::bail!("frozen_matmul: x [{m}, {k}] and w [{n}, {k2}] disagree on in-dim")
        }
        Ok(((1, m, n, k), l2.transpose(0, 1)?, Shape::from((m, n))))
    }
}

impl CustomOp2 for FrozenMatmul {
    fn name(&self) -> &'static str {
        "frozen-matmul"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (bmnk, l2t, shape) = Self::plan(l1, l2)?;
        if let (Some(p), CpuStorage::F32(x)) = (&self.0, s1) {
            let y = p.x_wt(View::of(x, l1, "frozen_matmul")?, bmnk.1);
            return Ok((CpuStorage::F32(y), shape));
        }
        Ok((s1.matmul(s2, bmnk, l1, &l2t)?, shape))
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        let (bmnk, l2t, shape) = Self::plan(l1, l2)?;
        Ok((s1.matmul(s2, bmnk, l1, &l2t)?, shape))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        // d(x W^T)/dx applied to grad: grad [m, n] @ W [n, k]. No gradient for W.
        let grad = grad.contiguous()?;
        if let Some(p) = &self.0 {
            if grad.dtype() == DType::F32 && grad.device().is_cpu() {
                return Ok((Some(p.product(&grad, false)?), None));
            }
        }
        Ok((Some(grad.matmul(w)?), None))
    }
}
