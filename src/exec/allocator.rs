//! The allocator's settings for a command, made before any other thread
//! exists: mimalloc's purge delay, and transparent huge pages kept to the
//! arrays that ask for them ([`crate::exec::huge_pages`]).

/// mimalloc's `mi_option_purge_delay`: milliseconds freed memory is kept
/// before it goes back to the kernel.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Leaves transparent huge pages to the arrays that ask for them, and,
/// for a command that frees big buffers step after step (`cluster`,
/// `run`), shortens mimalloc's purge delay unless the environment
/// (`MIMALLOC_PURGE_DELAY`) speaks for it.
pub fn tune(frees_big_buffers: bool) {
    #[cfg(target_os = "linux")]
    huge_pages_only_where_advised();
    if frees_big_buffers && std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // `cluster` frees each step's buffers (gigabytes at crawl scale)
        // as the next step allocates others of other sizes. Kept 250 ms
        // rather than mimalloc's 1 s, they mostly stop counting twice in
        // the peak, while most are still reused rather than faulted again,
        // as they would not be with a much shorter delay.
        // SAFETY: called before any other thread exists.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 250) };
    }
}

/// Under the kernel's `always` mode every allocation would be backed by
/// 2 MiB pages, which on a VM whose host backs memory lazily costs more
/// system time than it saves: huge pages are kept to advised memory (Linux
/// 6.18's `PR_THP_DISABLE_EXCEPT_ADVISED`), or turned off on older kernels.
/// Under `madvise` (mimalloc, built with `no_thp`, advises none of its
/// own) nothing is needed.
#[cfg(target_os = "linux")]
fn huge_pages_only_where_advised() {
    const PR_THP_DISABLE_EXCEPT_ADVISED: libc::c_ulong = 1 << 1;
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
    if mode.is_ok_and(|mode| mode.contains("[always]")) {
        // SAFETY: prctl with integer arguments touches no memory of ours.
        unsafe {
            let (disable, one) = (libc::PR_SET_THP_DISABLE, 1 as libc::c_ulong);
            if libc::prctl(disable, one, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) != 0 {
                libc::prctl(disable, one, 0, 0, 0);
            }
        }
    }
}
