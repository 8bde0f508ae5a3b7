//! Zeroed arrays read at random, from fresh memory of the system, on
//! transparent huge pages where they ask for them ([`FreshZeroed`]).
//!
//! The union-find's arrays by page are hundreds of megabytes read at
//! random: on 4 KiB pages nearly every access misses the TLB and walks the
//! page tables, which on a VM walk the host's as well. On 2 MiB pages the
//! TLB covers them. Only these arrays ask for huge pages (`MADV_HUGEPAGE`
//! on the 2 MiB-aligned part of each). Not the id table: every worker
//! writes it at random from its first pair on, and its huge pages' faults
//! cost more system time than the TLB saves (on every graph shape,
//! `scripts/bench_cluster.sh`). Nor the allocator's own memory (mimalloc
//! is built with `no_thp`): buffers freed and allocated again in other
//! sizes cost more to back in 2 MiB pieces than they save.
//! [`crate::exec::allocator`] leaves the process's huge pages to what is
//! advised.
//!
//! The arrays are mapped from the system, not taken from the allocator:
//! memory the allocator hands out again is not known to be zero, and it
//! zeroes a zeroed allocation of it in one thread, before any worker can
//! start (and every page, so a page of keys no row fills is backed all
//! the same). A fresh mapping is zero and backed only as it is touched,
//! by the worker that touches it.

use std::ops::Deref;
use std::ptr::NonNull;

/// A huge page's size.
const HUGE_PAGE: usize = 2 << 20;

/// `n` zeroed elements, fresh from the system and not yet touched: the
/// memory is backed as it is first written, by whichever thread writes it.
/// Read and written through atomics (shared), never moved.
#[derive(Debug)]
pub(crate) struct FreshZeroed<T> {
    start: NonNull<T>,
    len: usize,
}

// SAFETY: it owns its elements as a `Box<[T]>` would.
unsafe impl<T: Send> Send for FreshZeroed<T> {}
// SAFETY: as above; shared, it gives only `&[T]`.
unsafe impl<T: Sync> Sync for FreshZeroed<T> {}

impl<T: bytemuck::Zeroable> FreshZeroed<T> {
    /// On 4 KiB pages.
    pub(crate) fn new(n: usize) -> FreshZeroed<T> {
        FreshZeroed {
            start: map_zeroed(std::mem::size_of::<T>() * n),
            len: n,
        }
    }

    /// On huge pages where the system gives them.
    pub(crate) fn on_huge_pages(n: usize) -> FreshZeroed<T> {
        let array = FreshZeroed::new(n);
        let start = array.start.as_ptr() as usize;
        let end = start + std::mem::size_of::<T>() * n;
        let (first, last) = (start.next_multiple_of(HUGE_PAGE), end & !(HUGE_PAGE - 1));
        if first < last {
            advise_huge_pages(first, last - first);
        }
        array
    }
}

impl<T> Default for FreshZeroed<T> {
    fn default() -> FreshZeroed<T> {
        FreshZeroed {
            start: NonNull::dangling(),
            len: 0,
        }
    }
}

impl<T> Deref for FreshZeroed<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `len` zeroed elements, valid as `T: Zeroable` at
        // construction, owned and never freed while `self` lives.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl<T> Drop for FreshZeroed<T> {
    fn drop(&mut self) {
        let bytes = std::mem::size_of::<T>() * self.len;
        if bytes > 0 {
            // SAFETY: mapped by `map_zeroed` with these bytes, and no
            // element borrowed past `self`.
            unsafe { unmap(self.start, bytes) };
        }
    }
}

/// `bytes` of fresh zeroed memory, aligned to a page (dangling for none).
fn map_zeroed<T>(bytes: usize) -> NonNull<T> {
    if bytes == 0 {
        return NonNull::dangling();
    }
    assert!(std::mem::align_of::<T>() <= 4096);
    map_pages(bytes).cast()
}

#[cfg(unix)]
fn map_pages(bytes: usize) -> NonNull<u8> {
    // SAFETY: an anonymous private mapping touches no memory of ours.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if at == libc::MAP_FAILED {
        std::alloc::handle_alloc_error(page_layout(bytes));
    }
    NonNull::new(at.cast()).expect("mmap gives no null mapping")
}

#[cfg(unix)]
unsafe fn unmap(start: NonNull<impl Sized>, bytes: usize) {
    // SAFETY: the caller's promise: a whole mapping of ours, unused.
    unsafe { libc::munmap(start.as_ptr().cast(), bytes) };
}

#[cfg(not(unix))]
fn map_pages(bytes: usize) -> NonNull<u8> {
    let layout = page_layout(bytes);
    // SAFETY: `layout` has a non-zero size.
    NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
        .unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

#[cfg(not(unix))]
unsafe fn unmap(start: NonNull<impl Sized>, bytes: usize) {
    // SAFETY: the caller's promise: allocated by `map_pages` with `bytes`.
    unsafe { std::alloc::dealloc(start.as_ptr().cast(), page_layout(bytes)) };
}

fn page_layout(bytes: usize) -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(bytes, 4096).expect("an array's size fits a layout")
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: usize, bytes: usize) {
    // SAFETY: whole pages inside one allocation of ours; the advice changes
    // how they are backed, never what they hold.
    let refused = unsafe { libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE) };
    if refused != 0 {
        // Kernels without transparent huge pages: 4 KiB pages serve.
        tracing::trace!(bytes, "MADV_HUGEPAGE refused");
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::AtomicU64;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn arrays_are_zeroed_and_writable_on_either_side_of_the_advised_part() {
        for big in [
            FreshZeroed::<AtomicU64>::on_huge_pages(HUGE_PAGE / 8 * 3 + 5),
            FreshZeroed::new(HUGE_PAGE / 8 + 1),
        ] {
            assert!(big.iter().all(|x| x.load(Relaxed) == 0));
            let last = big.len() - 1;
            big[0].store(3, Relaxed);
            big[last].store(7, Relaxed);
            assert_eq!(big.iter().map(|x| x.load(Relaxed)).sum::<u64>(), 10);
        }
        assert!(FreshZeroed::<u8>::on_huge_pages(0).is_empty());
        assert!(FreshZeroed::<AtomicU64>::default().is_empty());
    }
}
