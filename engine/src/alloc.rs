//! The process allocator: large blocks are kept for reuse instead of going back to the kernel.
//!
//! A training step allocates and frees many large tensors (activations, attention probabilities,
//! gradients: many GB of fresh memory per step at 4 x 512 tokens). glibc serves each of them
//! from a new `mmap` and returns it with `munmap`, so every 4 KiB page of every tensor is a page
//! fault that the kernel zeroes: a large share of a step's CPU time went to the kernel
//! (results/perf/step.md, "Large blocks kept for reuse"). Here blocks of at least [`LARGE`] bytes
//! are mapped in size classes of whole [`UNIT`]s (8 per doubling) and, when freed, kept for reuse:
//! a request takes the smallest free block that fits and splits off the rest, so the activations
//! of micro-batches of other sequence lengths reuse each other's memory and after the first step
//! few requests reach the kernel (the caching-allocator idea of PyTorch's CUDA allocator, on the
//! CPU; step.md, "Large blocks by size class, split to fit"). Before a fresh mapping, the oldest
//! free blocks go back to the kernel until the large blocks held (in use and free) are no more
//! than the most ever in use at once: the lists never make the process larger than its peak.
//! Everything smaller goes to the system allocator unchanged.
//!
//! Declared as `#[global_allocator]` by the binary, the model benchmark and this crate's unit
//! tests, not by the library, so a program that links empathy-gym keeps its own choice.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks at least this large are served here (smaller ones: the system allocator).
pub const LARGE: usize = 1 << 20;
/// Size granularity of the large blocks (and the alignment they get); see [`units`] for classes.
pub const UNIT: usize = 64 << 10;
/// Largest block kept for reuse, in units (1 GiB); larger ones go back to the kernel when freed.
const CLASSES: usize = (1 << 30) / UNIT;

/// The allocator; see the module docs.
pub struct CachingAlloc;

/// Bytes of freed large blocks kept for reuse.
pub fn cached_bytes() -> usize {
    #[cfg(target_os = "linux")]
    return POOL.cached();
    #[cfg(not(target_os = "linux"))]
    0
}

/// The most bytes of large blocks in use at once since the last [`reset_high_water`] (sizes as
/// their classes round them): the memory a step's tensors needed at its peak, without the blocks
/// kept for reuse, as `torch.cuda.max_memory_allocated` reads it on a GPU. 0 where this allocator
/// does not serve large blocks (not Linux, or not the process's allocator).
pub fn high_water_bytes() -> usize {
    #[cfg(target_os = "linux")]
    return POOL.high_water();
    #[cfg(not(target_os = "linux"))]
    0
}

/// Starts [`high_water_bytes`] again from the bytes in use now.
pub fn reset_high_water() {
    #[cfg(target_os = "linux")]
    POOL.reset_high_water();
}

fn is_large(layout: &Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= UNIT
}

/// Units of the block for `size` bytes: its size class. Above 16 units a size is rounded up to
/// one of 8 classes per doubling (the units' highest power of two over 8), so requests that differ
/// a little, e.g. the activations of micro-batches of other sequence lengths, share blocks; a block
/// is less than 12.5% larger than its request, and pages past the request that are never written
/// stay unmapped by the kernel.
fn units(size: usize) -> usize {
    // No call that can panic (this runs inside the global allocator).
    let u = size.div_ceil(UNIT).max(1);
    let top = usize::BITS - 1 - u.leading_zeros(); // floor(log2 u)
    let step = (1usize << top >> 3).max(1);
    (u + step - 1) & !(step - 1)
}

#[cfg(target_os = "linux")]
static POOL: pool::Pool = pool::Pool::new();

#[cfg(target_os = "linux")]
mod pool {
    use std::sync::{Mutex, MutexGuard};

    use super::{CLASSES, LARGE, UNIT};

    const WORDS: usize = (CLASSES + 1).div_ceil(64);

    /// Links kept in the first bytes of a free block: its neighbours on the list of its size
    /// and on the list of all free blocks by age (0 = none).
    #[repr(C)]
    struct Links {
        class_prev: usize,
        class_next: usize,
        older: usize,
        newer: usize,
        units: usize,
    }

    /// Free blocks: `heads[u]` starts the list of free blocks of `u` units (a size class, or the
    /// rest of a split block); `newest` and `oldest` end the list of all free blocks by the time
    /// they were freed. `bytes` are on the lists, `live` handed out, `peak` the most ever handed
    /// out at once, `high` the most handed out at once since `reset_high_water`.
    struct Free {
        heads: [usize; CLASSES + 1],
        /// Bit u set when `heads[u]` is not empty (finds the smallest free block that fits).
        nonempty: [u64; WORDS],
        newest: usize,
        oldest: usize,
        bytes: usize,
        live: usize,
        peak: usize,
        high: usize,
    }

    impl Free {
        unsafe fn links<'a>(p: usize) -> &'a mut Links {
            &mut *(p as *mut Links)
        }

        /// Puts block `p` of `u` units on both lists (as the newest).
        unsafe fn push(&mut self, p: usize, u: usize) {
            *Self::links(p) = Links {
                class_prev: 0,
                class_next: self.heads[u],
                older: self.newest,
                newer: 0,
                units: u,
            };
            if self.heads[u] != 0 {
                Self::links(self.heads[u]).class_prev = p;
            }
            self.heads[u] = p;
            self.nonempty[u / 64] |= 1 << (u % 64);
            if self.newest != 0 {
                Self::links(self.newest).newer = p;
            } else {
                self.oldest = p;
            }
            self.newest = p;
            self.bytes += u * UNIT;
        }

        /// Takes block `p` off both lists; returns its units.
        unsafe fn unlink(&mut self, p: usize) -> usize {
            let l = Self::links(p);
            let u = l.units;
            match l.class_prev {
                0 => self.heads[u] = l.class_next,
                q => Self::links(q).class_next = l.class_next,
            }
            if l.class_next != 0 {
                Self::links(l.class_next).class_prev = l.class_prev;
            }
            if self.heads[u] == 0 {
                self.nonempty[u / 64] &= !(1 << (u % 64));
            }
            match l.older {
                0 => self.oldest = l.newer,
                q => Self::links(q).newer = l.newer,
            }
            match l.newer {
                0 => self.newest = l.older,
                q => Self::links(q).older = l.older,
            }
            self.bytes -= u * UNIT;
            u
        }

        /// The smallest size with a free block of at least `want` units.
        fn smallest_fit(&self, want: usize) -> Option<usize> {
            let mut w = want / 64;
            let mut bits = *self.nonempty.get(w)? & (!0u64 << (want % 64));
            loop {
                if bits != 0 {
                    return Some(w * 64 + bits.trailing_zeros() as usize);
                }
                w += 1;
                bits = *self.nonempty.get(w)?;
            }
        }
    }

    /// Free lists of large blocks, behind one lock (held for a few loads and stores, and for the
    /// unmapping of blocks it evicts; never while calling the system allocator).
    pub struct Pool(Mutex<Free>);

    impl Pool {
        pub const fn new() -> Self {
            Pool(Mutex::new(Free {
                heads: [0; CLASSES + 1],
                nonempty: [0; WORDS],
                newest: 0,
                oldest: 0,
                bytes: 0,
                live: 0,
                peak: 0,
                high: 0,
            }))
        }

        fn lock(&self) -> MutexGuard<'_, Free> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// Bytes on the free lists.
        pub fn cached(&self) -> usize {
            self.lock().bytes
        }

        /// The most bytes handed out at once since the last `reset_high_water`.
        pub fn high_water(&self) -> usize {
            self.lock().high
        }

        /// Starts the high-water mark again from the bytes handed out now.
        pub fn reset_high_water(&self) {
            let mut free = self.lock();
            free.high = free.live;
        }

        /// A block of `want` units (a class) and whether it is a fresh mapping (zeroed): the
        /// smallest free block that fits, split when larger (the rest stays free as a block of
        /// its own, or goes back to the kernel when under [`LARGE`]); else a fresh mapping (null
        /// when the kernel has no memory). Before mapping, the oldest free blocks go back to the
        /// kernel until the blocks held (in use and free) are no more than the peak in use, so
        /// the free lists never make the process larger than its peak.
        ///
        /// # Safety
        /// Blocks on the lists must be ones `give` received.
        #[inline(never)]
        pub unsafe fn take(&self, want: usize) -> (*mut u8, bool) {
            {
                let mut free = self.lock();
                free.live += want * UNIT;
                free.peak = free.peak.max(free.live);
                free.high = free.high.max(free.live);
                if let Some(u) = free.smallest_fit(want) {
                    let p = free.heads[u];
                    free.unlink(p);
                    let (rest, at) = (u - want, p + want * UNIT);
                    if rest * UNIT >= LARGE {
                        free.push(at, rest);
                    } else if rest > 0 {
                        libc::munmap(at as *mut libc::c_void, rest * UNIT);
                    }
                    return (p as *mut u8, false);
                }
                while free.oldest != 0 && free.live + free.bytes > free.peak {
                    let p = free.oldest;
                    let u = free.unlink(p);
                    libc::munmap(p as *mut libc::c_void, u * UNIT);
                }
            }
            let p = map(want * UNIT);
            if p.is_null() {
                self.lock().live -= want * UNIT;
            }
            (p, true)
        }

        /// Keeps a freed block of `u` units for reuse (one larger than the largest class goes
        /// back to the kernel).
        ///
        /// # Safety
        /// `p` must come from `take(u)` of this pool and not be used afterwards.
        #[inline(never)]
        pub unsafe fn give(&self, p: *mut u8, u: usize) {
            {
                let mut free = self.lock();
                free.live -= u * UNIT;
                if u <= CLASSES {
                    free.push(p as usize, u);
                    return;
                }
            }
            libc::munmap(p as *mut libc::c_void, u * UNIT);
        }
    }

    /// `len` bytes of zeroed memory at a UNIT boundary, or null.
    unsafe fn map(len: usize) -> *mut u8 {
        let span = len + UNIT;
        let p = libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let start = p as usize;
        let aligned = start.next_multiple_of(UNIT);
        let (head, tail) = (aligned - start, span - (aligned - start) - len);
        if head > 0 {
            libc::munmap(p, head);
        }
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        aligned as *mut u8
    }
}

// SAFETY: large blocks are private anonymous mappings of whole units at a UNIT alignment (hence
// any smaller power-of-two alignment), at least as large as the layout, and go back to the pool
// with the units their layout gives (GlobalAlloc passes the same layout to dealloc); the rest is
// System's.
#[cfg(target_os = "linux")]
unsafe impl GlobalAlloc for CachingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(&layout) {
            POOL.take(units(layout.size())).0
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(&layout) {
            let (p, fresh) = POOL.take(units(layout.size()));
            if !p.is_null() && !fresh {
                // A reused block holds old data; a fresh mapping is zero already (writing it
                // would fault in every page now).
                std::ptr::write_bytes(p, 0, layout.size());
            }
            p
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(&layout) {
            POOL.give(ptr, units(layout.size()))
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        if !is_large(&layout) && !is_large(&new_layout) {
            return System.realloc(ptr, layout, new_size);
        }
        let new = self.alloc(new_layout);
        if !new.is_null() {
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}

// Elsewhere: the system allocator for everything.
#[cfg(not(target_os = "linux"))]
unsafe impl GlobalAlloc for CachingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        System.realloc(ptr, layout, new_size)
    }
}

// The unit tests run on this allocator, so every test of the crate exercises it.
#[cfg(test)]
#[global_allocator]
static TEST_ALLOC: CachingAlloc = CachingAlloc;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::pool::Pool;
    use super::*;

    #[test]
    fn the_high_water_mark_counts_from_its_reset() {
        static P: Pool = Pool::new();
        // SAFETY: every block goes back once, with the units it was taken with.
        unsafe {
            let (a, b) = (P.take(2).0, P.take(3).0);
            assert_eq!(P.high_water(), 5 * UNIT);
            P.give(b, 3);
            P.reset_high_water();
            assert_eq!(P.high_water(), 2 * UNIT, "from what is in use at the reset");
            let c = P.take(1).0;
            P.give(c, 1);
            assert_eq!(P.high_water(), 3 * UNIT, "not the 5 before the reset");
            P.give(a, 2);
        }
    }

    #[test]
    fn a_freed_block_is_reused_for_its_size() {
        static P: Pool = Pool::new();
        // SAFETY: every block goes back once, with the units it was taken with.
        unsafe {
            let (a, fresh) = P.take(3);
            assert!(fresh && !a.is_null() && (a as usize).is_multiple_of(UNIT));
            a.write_bytes(0xAB, 3 * UNIT);
            P.give(a, 3);
            assert_eq!(P.cached(), 3 * UNIT);
            assert_eq!(P.take(3), (a, false), "the same block back from its list");
            assert_eq!(P.cached(), 0);
            P.give(a, 3);
        }
    }

    #[test]
    fn the_oldest_free_blocks_leave_so_that_nothing_exceeds_the_peak() {
        static P: Pool = Pool::new();
        // SAFETY: every block goes back once, with the units it was taken with.
        unsafe {
            // Peak in use: 2 + 3 + 4 = 9 units; all three freed, a then b then c.
            let (a, b, c) = (P.take(2).0, P.take(3).0, P.take(4).0);
            P.give(a, 2);
            P.give(b, 3);
            P.give(c, 4);
            assert_eq!(P.cached(), 9 * UNIT);
            // A 5-unit block (no free one that large): 5 in use + 9 free > 9, so the oldest
            // go, a (2) then b (3), leaving 5 + 4 = 9.
            let d = P.take(5).0;
            assert_eq!(P.cached(), 4 * UNIT);
            assert_eq!(P.take(4).0, c, "the newest free block stayed");
            P.give(c, 4);
            P.give(d, 5);
            assert_eq!(P.cached(), 9 * UNIT);
            // The lists stay consistent when the oldest block is taken first, then the newest.
            let e = P.take(4).0;
            assert_eq!(e, c);
            assert_eq!(P.take(5).0, d);
            assert_eq!(P.cached(), 0);
            P.give(d, 5);
            P.give(e, 4);
        }
    }

    #[test]
    fn the_smallest_free_block_that_fits_is_split() {
        static P: Pool = Pool::new();
        let large = LARGE / UNIT;
        // SAFETY: every block goes back once, with the units it was taken with; blocks are
        // written only within their units.
        unsafe {
            // Free blocks of 40 and 200 units (200: another word of the bitmap).
            let (a, b) = (P.take(40).0, P.take(200).0);
            P.give(b, 200);
            P.give(a, 40);
            // 24 units: the 40 split; its last 16 (= LARGE) stay free as a block of their own.
            let (c, fresh) = P.take(24);
            assert_eq!((c, fresh), (a, false));
            assert_eq!(P.cached(), (16 + 200) * UNIT);
            let d = P.take(large).0;
            assert_eq!(d as usize, a as usize + 24 * UNIT, "the rest of the 40");
            d.write_bytes(1, large * UNIT);
            // 190 units: the 200 split; a rest under LARGE (10 units) goes back to the kernel.
            let e = P.take(190).0;
            assert_eq!(e, b);
            assert_eq!(P.cached(), 0);
            // Nothing free fits: a fresh mapping.
            let (f, fresh) = P.take(30);
            assert!(fresh && !f.is_null());
            for (p, u) in [(c, 24), (d, large), (e, 190), (f, 30)] {
                P.give(p, u);
            }
        }
    }

    #[test]
    fn alloc_zeroed_clears_a_reused_block() {
        let layout = Layout::from_size_align((41 << 20) + 7, 8).unwrap();
        // SAFETY: alloc/dealloc with one layout; reads stay within the size.
        unsafe {
            let a = CachingAlloc.alloc(layout);
            a.write_bytes(0xFF, layout.size());
            CachingAlloc.dealloc(a, layout);
            let b = CachingAlloc.alloc_zeroed(layout);
            let bytes = std::slice::from_raw_parts(b, layout.size());
            assert!(bytes.iter().all(|&v| v == 0));
            CachingAlloc.dealloc(b, layout);
        }
    }

    #[test]
    fn realloc_keeps_contents_across_the_threshold_both_ways() {
        let mut v: Vec<u32> = (0..1000).collect();
        v.extend(1000..(3 << 20) / 4); // grows from small (system) to large (the pool)
        assert!(v.iter().enumerate().all(|(i, &x)| x as usize == i));
        v.truncate(500);
        v.shrink_to_fit(); // large back to small
        assert!(v.iter().enumerate().all(|(i, &x)| x as usize == i));
    }

    #[test]
    fn alignments_beyond_a_unit_go_to_the_system_allocator() {
        let layout = Layout::from_size_align(4 << 20, 2 * UNIT).unwrap();
        assert!(!is_large(&layout));
        // SAFETY: alloc/dealloc with one layout.
        unsafe {
            let p = CachingAlloc.alloc(layout);
            assert!(!p.is_null() && (p as usize).is_multiple_of(2 * UNIT));
            CachingAlloc.dealloc(p, layout);
        }
    }

    #[test]
    fn sizes_round_up_to_eight_classes_per_doubling() {
        // 1 MiB = 16 units: steps of 16 / 8 = 2 units between 16 and 31.
        assert_eq!(units(LARGE), 16);
        assert_eq!(units(LARGE + 1), 18);
        assert_eq!(units(31 * UNIT), 32);
        // 3 MiB = 48 units: highest power of two 32, steps of 4.
        assert_eq!(units(3 << 20), 48);
        assert_eq!(units((3 << 20) + 1), 52);
        // 100 MiB = 1600 units: highest power of two 1024, steps of 128 units (8 MiB).
        assert_eq!(units(100 << 20), 1664);
        for u in 16..5000 {
            let c = units(u * UNIT);
            assert!(c >= u && 8 * (c - u) < u, "{u} units -> class {c}");
            assert_eq!(units(c * UNIT), c, "a class is its own class");
        }
    }
}
