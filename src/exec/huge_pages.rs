//! Zeroed arrays read at random, on transparent huge pages.
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
//! The arrays come from the allocator as any other (fresh memory from the
//! system, zero and not yet touched), so that once freed the next step's
//! buffers reuse them.

/// A huge page's size.
const HUGE_PAGE: usize = 2 << 20;

/// `n` zeroed elements, not yet touched where the memory is fresh, on huge
/// pages where the system gives them.
pub(crate) fn zeroed_on_huge_pages<T: bytemuck::Zeroable>(n: usize) -> Box<[T]> {
    let array: Box<[T]> = bytemuck::allocation::zeroed_slice_box(n);
    let start = array.as_ptr() as usize;
    let end = start + std::mem::size_of_val(&*array);
    let (first, last) = (start.next_multiple_of(HUGE_PAGE), end & !(HUGE_PAGE - 1));
    if first < last {
        advise_huge_pages(first, last - first);
    }
    array
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

    #[test]
    fn arrays_are_zeroed_and_writable_on_either_side_of_the_advised_part() {
        let mut big = zeroed_on_huge_pages::<u64>(HUGE_PAGE / 8 * 3 + 5);
        assert!(big.iter().all(|&x| x == 0));
        let last = big.len() - 1;
        (big[0], big[last]) = (3, 7);
        assert_eq!(big.iter().sum::<u64>(), 10);
        assert!(zeroed_on_huge_pages::<u8>(0).is_empty());
    }
}
