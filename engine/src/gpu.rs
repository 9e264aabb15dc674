//! Opening a CUDA device for the project: candle's `Device::new_cuda` with two settings of the
//! allocator that candle's defaults leave costly for a training loop (results/perf/gpu.md,
//! "A lead for the next GPU session"). Every CUDA device of the project (training, `replay
//! verify`, the benchmarks, the CUDA tests) is opened here.
//!
//! 1. **Freed memory stays in the pool.** cudarc allocates with `cuMemAllocAsync` from the
//!    device's default memory pool, whose release threshold is 0 by default: at every
//!    synchronization (each read of a loss, a sampled token or a gradient norm) the pool hands
//!    its free memory back to the driver, so the next step maps its GBs of activations again.
//!    The threshold is set to u64::MAX (CUDA driver API, `cuMemPoolSetAttribute`,
//!    `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`: "amount of reserved memory in bytes to hold onto
//!    before trying to release memory back to the OS"), as PyTorch's caching allocator keeps its
//!    blocks. Memory is still freed to the pool and reused by later allocations. Other projects
//!    found re-allocating from a trimmed pool far slower than from a kept one
//!    (vortex-data/vortex#7831; kornia/kornia-rs#1010, also on cudarc; numbers in
//!    results/perf/gpu.md); RAPIDS rmm and llama.cpp set the same threshold.
//! 2. **No events per allocation.** cudarc gives every allocation two CUDA events for
//!    synchronizing several streams, but records and waits on them only in multi-stream mode,
//!    which candle (one per-thread stream per device) never enters: creating and destroying them
//!    is pure host time per tensor. Event tracking is switched off on the device's context.
//!
//! Neither changes a value: the same kernels run on the same stream in the same order.

use candle_core::{Device, Result};

/// The CUDA device `ordinal` with the allocator's settings above; an error where this build or
/// machine has no usable CUDA device.
pub fn open_cuda(ordinal: usize) -> Result<Device> {
    let device = Device::new_cuda(ordinal)?;
    #[cfg(feature = "cuda")]
    if let Device::Cuda(cuda) = &device {
        // SAFETY: candle runs every op of this device on its one stream (not multi-stream
        // mode), where cudarc never records or waits on these events; tensors made before this
        // call keep theirs.
        unsafe { cuda.disable_event_tracking() };
        // Without memory pools (old drivers, some virtual GPUs) cudarc allocates with cuMemAlloc
        // and there is no pool to keep memory in.
        if pool::in_use(cuda) {
            pool::set(cuda, pool::RELEASE_THRESHOLD, u64::MAX)?;
        }
    }
    Ok(device)
}

/// Whether `device` is a CUDA device opened by [`open_cuda`] (event tracking off, the pool's
/// release threshold at its maximum); false for other devices. The CUDA tests check it.
pub fn allocator_settings_applied(device: &Device) -> Result<bool> {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(cuda) = device {
        let kept = !pool::in_use(cuda) || pool::get(cuda, pool::RELEASE_THRESHOLD)? == u64::MAX;
        return Ok(!cuda.is_event_tracking() && kept);
    }
    let _ = device;
    Ok(false)
}

/// Bytes the default memory pool of `device` holds from the driver now, in use or free; None
/// for other devices and where cudarc does not allocate from the pool. The CUDA tests check
/// that freed memory stays there.
pub fn pool_reserved_bytes(device: &Device) -> Result<Option<u64>> {
    #[cfg(feature = "cuda")]
    if let Some(cuda) = pool::of(device) {
        return Ok(Some(pool::get(cuda, pool::RESERVED_MEM_CURRENT)?));
    }
    let _ = device;
    Ok(None)
}

/// The most bytes of the default memory pool of `device` in use at once since the last
/// [`reset_pool_used_high`] (`CU_MEMPOOL_ATTR_USED_MEM_HIGH`): the tensors' peak, which PyTorch
/// reads as `torch.cuda.max_memory_allocated`, without the CUDA context and the pool's free
/// memory that nvidia-smi counts. None for other devices and where cudarc does not allocate from
/// the pool. The model benchmark prints it per case.
pub fn pool_used_high_bytes(device: &Device) -> Result<Option<u64>> {
    #[cfg(feature = "cuda")]
    if let Some(cuda) = pool::of(device) {
        return Ok(Some(pool::get(cuda, pool::USED_MEM_HIGH)?));
    }
    let _ = device;
    Ok(None)
}

/// Starts [`pool_used_high_bytes`] again (the driver allows a reset to zero only); nothing for
/// other devices.
pub fn reset_pool_used_high(device: &Device) -> Result<()> {
    #[cfg(feature = "cuda")]
    if let Some(cuda) = pool::of(device) {
        pool::set(cuda, pool::USED_MEM_HIGH, 0)?;
    }
    let _ = device;
    Ok(())
}

/// The attributes of a device's default memory pool (CUDA driver API, "Stream Ordered Memory
/// Allocator"); all three are cuuint64_t.
#[cfg(feature = "cuda")]
mod pool {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    use candle_core::cuda_backend::CudaDevice;
    use candle_core::{Device, Error, Result};

    pub use sys::CUmemPool_attribute::{
        CU_MEMPOOL_ATTR_RELEASE_THRESHOLD as RELEASE_THRESHOLD,
        CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT as RESERVED_MEM_CURRENT,
        CU_MEMPOOL_ATTR_USED_MEM_HIGH as USED_MEM_HIGH,
    };

    /// Whether cudarc allocates from the device's pool (`cuMemAllocAsync`).
    pub fn in_use(cuda: &CudaDevice) -> bool {
        cuda.cuda_stream().context().has_async_alloc()
    }

    /// The CUDA device of `device` where cudarc allocates from its pool; None otherwise.
    pub fn of(device: &Device) -> Option<&CudaDevice> {
        match device {
            Device::Cuda(cuda) if in_use(cuda) => Some(cuda),
            _ => None,
        }
    }

    fn default_pool(cuda: &CudaDevice) -> Result<sys::CUmemoryPool> {
        // SAFETY: a device handle from the device's own cudarc context.
        unsafe { result::device::get_default_mem_pool(cuda.cuda_stream().context().cu_device()) }
            .map_err(Error::wrap)
    }

    pub fn get(cuda: &CudaDevice, attr: sys::CUmemPool_attribute) -> Result<u64> {
        let mut value = 0u64;
        // SAFETY: a valid pool, and a u64 for the u64 attributes this module names.
        unsafe {
            result::mem_pool::get_attribute(
                default_pool(cuda)?,
                attr,
                (&mut value as *mut u64).cast(),
            )
        }
        .map_err(Error::wrap)?;
        Ok(value)
    }

    pub fn set(cuda: &CudaDevice, attr: sys::CUmemPool_attribute, mut value: u64) -> Result<()> {
        // SAFETY: as in `get`.
        unsafe {
            result::mem_pool::set_attribute(
                default_pool(cuda)?,
                attr,
                (&mut value as *mut u64).cast(),
            )
        }
        .map_err(Error::wrap)
    }
}
