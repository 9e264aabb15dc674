//! A LoRA projection of the training forward as one op: y = x W^T (+ b) + s (x A^T) B^T with W (and
//! b) frozen and A, B trainable (Hu et al. 2021, eq. 3; s = alpha / r).
//!
//! Composed from candle ops, autograd keeps every intermediate alive until the backward: the base
//! product x W^T and the adapter's product (and, for a half-precision base, its f32 input and
//! output) besides the sum, three to five [rows, out] tensors per projection where the backward
//! needs none of them. At 4 x 512 tokens that is 85 MB per layer of SmolLM2-135M in f32, 2.5 GB
//! over 30 layers. This op runs the composition's forward with the backend's own kernels on the
//! storages, the same operations in the same order (so its output equals the composition's bit for
//! bit), and keeps only its inputs, its output and the small s x A^T ([rows, r]); its backward
//! applies the composition's backward rules op for op. The generic forward runs on any backend;
//! on the CPU in f32, `lora_linear_cpu.rs` computes the same bits in fewer passes.

use std::sync::{Arc, OnceLock};

use candle_core::backend::BackendStorage;
use candle_core::op::{Add, BackpropOp};
use candle_core::{
    CpuStorage, CudaStorage, CustomOp3, DType, Layout, Result, Shape, Storage, Tensor,
};

use super::bf16_weight::Bf16Weight;
use super::lora_linear_cpu;

/// The frozen part of a LoRA projection: base weight W [out, in] (either memory order), optional
/// bias [out], and the adapter's scale. Arguments of the op: x [rows, in], A [r, in], B [out, r].
pub(super) struct LoraLinear {
    pub(super) weight: Tensor,
    pub(super) bias: Option<Tensor>,
    pub(super) scale: f64,
    /// hs = s (x A^T) [rows, r] of the forward, which the backward then reads rather than
    /// recomputes: a matmul and a scale fewer per projection (two kernel launches on a GPU) for
    /// 128 KiB per projection at 2048 rows.
    pub(super) hs: OnceLock<Tensor>,
    /// W packed for bf16 products (`model.cpu_matmul: bf16`): the base's two products are then
    /// bf16 products on the CPU.
    pub(super) bf16: Option<Arc<Bf16Weight>>,
}

impl LoraLinear {
    /// (rows, in, r, out) of x [rows, in], A [r, in], B [out, r] and W [out, in], or an error
    /// naming the four shapes.
    fn dims(&self, xl: &Layout, al: &Layout, bl: &Layout) -> Result<(usize, usize, usize, usize)> {
        let (m, k) = xl.shape().dims2()?;
        let (r, k2) = al.shape().dims2()?;
        let (n, r2) = bl.shape().dims2()?;
        let (n2, k3) = self.weight.dims2()?;
        if k != k2 || k != k3 || r != r2 || n != n2 {
            candle_core::bail!(
                "lora_linear_train: x {:?}, W {:?}, A {:?} and B {:?} do not fit together",
                xl.dims(),
                self.weight.dims(),
                al.dims(),
                bl.dims()
            )
        }
        Ok((m, k, r, n))
    }

    /// The adapter's hs = scale (xf A^T) [rows, r], xf = x in f32.
    fn adapter_input<S: BackendStorage>(
        &self,
        (x, xl): (&S, &Layout),
        (a, al): (&S, &Layout),
        (m, k, r): (usize, usize, usize),
    ) -> Result<S> {
        let xf = (x.dtype() != DType::F32)
            .then(|| x.to_dtype(xl, DType::F32))
            .transpose()?;
        let (xf_s, xfl) = match &xf {
            Some(s) => (s, Layout::contiguous((m, k))),
            None => (x, xl.clone()),
        };
        let h = xf_s.matmul(a, (1, m, r, k), &xfl, &al.transpose(0, 1)?)?;
        h.affine(&Layout::contiguous((m, r)), self.scale, 0.0)
    }

    /// Keeps hs [rows, r] for the backward.
    fn keep_hs(&self, hs: Storage, rows: usize, r: usize) {
        let hs = Tensor::from_storage(hs, (rows, r), BackpropOp::none(), false);
        let _ = self.hs.set(hs); // set once: one op per forward call
    }

    /// The forward on storages of one backend; `pick` takes that backend's storage out of a
    /// frozen tensor's, `wrap` puts one back into a `Storage`.
    fn forward<S: BackendStorage>(
        &self,
        pick: impl Fn(&Storage) -> Option<&S>,
        wrap: impl Fn(S) -> Storage,
        (x, xl): (&S, &Layout),
        (a, al): (&S, &Layout),
        (b, bl): (&S, &Layout),
    ) -> Result<(S, Shape)> {
        let (m, k, r, n) = self.dims(xl, al, bl)?;
        let (ws, wl) = self.weight.storage_and_layout();
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
        let hs = self.adapter_input((x, xl), (a, al), (m, k, r))?;
        let h_l = Layout::contiguous((m, r));
        let mut d = hs.matmul(b, (1, m, n, r), &h_l, &bl.transpose(0, 1)?)?;
        if x.dtype() != DType::F32 {
            d = d.to_dtype(&out_l, x.dtype())?;
        }
        self.keep_hs(wrap(hs), m, r);
        Ok((
            y.binary_impl::<Add>(&d, &out_l, &out_l)?,
            Shape::from((m, n)),
        ))
    }

    /// The CPU forward when x and W are f32: the same values through `lora_linear_cpu`, which
    /// adds the adapter into the base product in place. None for other dtypes.
    fn cpu_f32_forward(
        &self,
        (x, xl): (&CpuStorage, &Layout),
        (a, al): (&CpuStorage, &Layout),
        (b, bl): (&CpuStorage, &Layout),
    ) -> Result<Option<(CpuStorage, Shape)>> {
        let (ws, wl) = self.weight.storage_and_layout();
        let (Storage::Cpu(CpuStorage::F32(w)), CpuStorage::F32(xs)) = (&*ws, x) else {
            return Ok(None);
        };
        let dims @ (m, k, r, n) = self.dims(xl, al, bl)?;
        let hs = self.adapter_input((x, xl), (a, al), (m, k, r))?;
        let bias = self.bias.as_ref().map(|t| t.storage_and_layout());
        let bias = match &bias {
            Some((s, l)) => Some(crate::kernels::cpu::contiguous_slice::<f32>(cpu(s)?, l)?),
            None => None,
        };
        let CpuStorage::F32(hs) = hs else {
            candle_core::bail!("lora_linear_train: the adapter's hs is not f32")
        };
        let y = lora_linear_cpu::forward(
            (xs, xl),
            (w, wl, self.bf16.as_deref()),
            bias,
            &hs,
            crate::kernels::cpu::contiguous_slice::<f32>(b, bl)?,
            dims,
        )?;
        self.keep_hs(Storage::Cpu(CpuStorage::F32(hs)), m, r);
        Ok(Some((y, Shape::from((m, n)))))
    }
}

fn cpu(s: &Storage) -> Result<&CpuStorage> {
    match s {
        Storage::Cpu(s) => Ok(s),
        _ => Err(wrong_device("the bias")),
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
        if let Some(out) = self.cpu_f32_forward((x, xl), (a, al), (b, bl))? {
            return Ok(out);
        }
        self.forward(
            |s| match s {
                Storage::Cpu(s) => Some(s),
                _ => None,
            },
            Storage::Cpu,
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
            Storage::Cuda,
            (x, xl),
            (a, al),
            (b, bl),
        )
    }

    /// The composition's backward, rule by rule: the base's dx = g W (frozen_matmul); through the
    /// cast, gd = g in f32; through hs B^T, d hs = gd B and dB = gd^T hs (the transpose of the
    /// rule's (hs^T gd)^T, the same sums, computed in B's own layout where the rule's transposed
    /// view took a copy when stored); through the scale, dh = s d hs; through xf A^T,
    /// dxf = dh A and dA = dh^T xf (likewise for (xf^T dh)^T: gemm then runs its wide kernels
    /// over A's `in` columns, not r = 16 rows, which is faster: results/perf/step.md, "The
    /// log-prob's, SwiGLU's and RMSNorm's row loops vectorized"); through the cast, dxf in x's
    /// dtype.
    /// hs = s (x A^T) ([rows, r]) is the one the forward kept.
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
        let hs = self.hs.get().ok_or_else(|| {
            candle_core::Error::Msg("lora_linear_train: the backward ran before the forward".into())
        })?;
        let gd = grad.to_dtype(DType::F32)?;
        let d_hs = gd.matmul(&b)?;
        let db = gd.t()?.matmul(hs)?;
        let dh = (d_hs * self.scale)?;
        let da = dh.t()?.matmul(&xf)?;
        let f32_cpu = [grad.dtype(), self.weight.dtype()] == [DType::F32; 2];
        let dx = if grad.device().is_cpu() && f32_cpu {
            lora_linear_cpu::input_grad(&grad, (&self.weight, self.bf16.as_deref()), &dh, &a)?
        } else {
            (grad.matmul(&self.weight)? + dh.matmul(&a)?.to_dtype(x.dtype())?)?
        };
        Ok((Some(dx), Some(da), Some(db)))
    }
}
