//! A LoRA projection of the training forward as one op: y = x W^T (+ b) + s (x A^T) B^T with W (and
//! b) frozen and A, B trainable (Hu et al. 2021, eq. 3; s = alpha / r).
//!
//! Composed from candle ops, autograd keeps every intermediate alive until the backward: the base
//! product x W^T and the adapter's product (and, for a half-precision base, its f32 input and
//! output) besides the sum, three to five [rows, out] tensors per projection where the backward
//! needs none of them. At 4 x 512 tokens that is 85 MB per layer of SmolLM2-135M in f32, 2.5 GB
//! over 30 layers. This op runs the composition's forward with the backend's own kernels on the
//! storages, the same operations in the same order (so its output equals the composition's bit for
//! bit), and keeps only its inputs and output; its backward recomputes the small s x A^T
//! ([rows, r]) and applies the composition's backward rules op for op. The generic forward runs
//! on any backend (CPU and CUDA share it).

use candle_core::backend::BackendStorage;
use candle_core::op::Add;
use candle_core::{
    CpuStorage, CudaStorage, CustomOp3, DType, Layout, Result, Shape, Storage, Tensor,
};

/// The frozen part of a LoRA projection: base weight W [out, in] (either memory order), optional
/// bias [out], and the adapter's scale. Arguments of the op: x [rows, in], A [r, in], B [out, r].
pub(super) struct LoraLinear {
    pub(super) weight: Tensor,
    pub(super) bias: Option<Tensor>,
    pub(super) scale: f64,
}

impl LoraLinear {
    /// The forward on storages of one backend; `pick` takes that backend's storage out of a
    /// frozen tensor's.
    #[allow(clippy::too_many_arguments)]
    fn forward<S: BackendStorage>(
        &self,
        pick: impl Fn(&Storage) -> Option<&S>,
        (x, xl): (&S, &Layout),
        (a, al): (&S, &Layout),
        (b, bl): (&S, &Layout),
    ) -> Result<(S, Shape)> {
        let (m, k) = xl.shape().dims2()?;
        let (r, k2) = al.shape().dims2()?;
        let (n, r2) = bl.shape().dims2()?;
        let (ws, wl) = self.weight.storage_and_layout();
        let (n2, k3) = wl.shape().dims2()?;
        if k != k2 || k != k3 || r != r2 || n != n2 {
            candle_core::bail!(
                "lora_linear_train: x {:?}, W {:?}, A {:?} and B {:?} do not fit together",
                xl.dims(),
                wl.dims(),
                al.dims(),
                bl.dims()
            )
        }
        let w = pick(&ws).ok_or_else(|| wrong_device("W"))?;
        let out_l = Layout::contiguous((m, n));
        // Base: x W^T (+ b), as frozen_matmul and broadcast_add compute it.
        let mut y = x.matmul(w, (1, m, n, k), xl, &wl.transpose(0, 1)?)?;
        if let Some(bias) = &self.bias {
            let (bs, bias_l) = bias.storage_and_layout();
            let bs = pick(&bs).ok_or_else(|| wrong_device("the bias"))?;
            y = y.binary_impl::<Add>(bs, &out_l, &bias_l.broadcast_as((m, n))?)?;
        }
        // Adapter, in f32: ((x A^T) s) B^T, cast to x's dtype, added.
        let dtype = x.dtype();
        let xf_storage;
        let (xf, xfl) = if dtype == DType::F32 {
            (x, xl.clone())
        } else {
            xf_storage = x.to_dtype(xl, DType::F32)?;
            (&xf_storage, Layout::contiguous((m, k)))
        };
        let h = xf.matmul(a, (1, m, r, k), &xfl, &al.transpose(0, 1)?)?;
        let h_l = Layout::contiguous((m, r));
        let hs = h.affine(&h_l, self.scale, 0.0)?;
        let mut d = hs.matmul(b, (1, m, n, r), &h_l, &bl.transpose(0, 1)?)?;
        if dtype != DType::F32 {
            d = d.to_dtype(&out_l, dtype)?;
        }
        Ok((
            y.binary_impl::<Add>(&d, &out_l, &out_l)?,
            Shape::from((m, n)),
        ))
    }
}

fn wrong_device(what: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!(
        "lora_linear_train: {what} is not on the device of x"
    ))
}

impl CustomOp3 for LoraLinear {
    fn name(&self) -> &'static str {
        "lora-linear-train"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        a: &CpuStorage,
        al: &Layout,
        b: &CpuStorage,
        bl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.forward(
            |s| match s {
                Storage::Cpu(s) => Some(s),
                _ => None,
            },
            (x, xl),
            (a, al),
            (b, bl),
        )
    }

    fn cuda_fwd(
        &self,
        x: &CudaStorage,
        xl: &Layout,
        a: &CudaStorage,
        al: &Layout,
        b: &CudaStorage,
        bl: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        self.forward(
            |s| match s {
                Storage::Cuda(s) => Some(s),
                _ => None,
            },
            (x, xl),
            (a, al),
            (b, bl),
        )
    }

    /// The composition's backward, rule by rule: the base's dx = g W (frozen_matmul); through the
    /// cast, gd = g in f32; through hs B^T, d hs = gd B and dB = (hs^T gd)^T; through the scale,
    /// dh = s d hs; through xf A^T, dxf = dh A and dA = (xf^T dh)^T; through the cast, dxf in x's
    /// dtype. hs = s (x A^T) is recomputed ([rows, r]).
    fn bwd(
        &self,
        x: &Tensor,
        a: &Tensor,
        b: &Tensor,
        _y: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let grad = grad.contiguous()?;
        let xf = x.detach().to_dtype(DType::F32)?;
        let (a, b) = (a.detach(), b.detach());
        let hs = (xf.matmul(&a.t()?)? * self.scale)?;
        let gd = grad.to_dtype(DType::F32)?;
        let d_hs = gd.matmul(&b)?;
        let db = hs.t()?.matmul(&gd)?.t()?;
        let dh = (d_hs * self.scale)?;
        let dxf = dh.matmul(&a)?;
        let da = xf.t()?.matmul(&dh)?.t()?;
        let dx_base = grad.matmul(&self.weight)?;
        let dx = (dx_base + dxf.to_dtype(x.dtype())?)?;
        Ok((Some(dx), Some(da), Some(db)))
    }
}
