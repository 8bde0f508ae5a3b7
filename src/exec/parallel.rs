//! Sharing work out: a ticket counter that hands tasks to whichever thread
//! asks next (table builds, object opens, the pair units a process's
//! workers read), one thread per piece of an array for work whose pieces
//! are known ahead, and a static balance of items by size for work that
//! must be placed before it starts (units among workers or processes);
//! and the small helpers the threads share: a lock that survives a panic
//! elsewhere, and a cache hint for loops over memory far larger than the
//! cache.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, also after a panic elsewhere: the data here (errors,
/// summaries) stays meaningful, and the panic is reported on its own.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A hint to fetch `value`'s cache line; it never faults and has no effect
/// on the result.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of every x86-64 CPU, and a prefetch reads nothing
    // into the program: it only warms the cache for a valid reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Hands out `0..n`, each once, to whichever thread asks first: a thread
/// that finishes early takes more, so none waits for a slower one (a
/// worker whose core the VM slows, a unit of more rows).
#[derive(Debug)]
pub(crate) struct Tickets {
    next: AtomicUsize,
    n: usize,
}

impl Tickets {
    pub(crate) fn new(n: usize) -> Tickets {
        Tickets {
            next: AtomicUsize::new(0),
            n,
        }
    }

    /// The next task, if any is left.
    pub(crate) fn take(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < self.n).then_some(i)
    }
}

/// `task(0..n)` on up to `threads` scoped threads, each taking the next task
/// as it finishes one; the results in task order. A panic in a task is
/// raised again here.
pub(crate) fn in_parallel<T: Send>(
    n: usize,
    threads: usize,
    task: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let tickets = Tickets::new(n);
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.clamp(1, n.max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while let Some(i) = tickets.take() {
                        done.push((i, task(i)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, t)| t).collect()
}

/// `task(start, chunk)` on each chunk of `items` of `each` items (`start`
/// its first item's index), each on a thread of its own but the first,
/// which runs here: for work on one array whose pieces are known ahead
/// (a giant component's pages, on the cores its process's other workers
/// leave idle). The results in chunk order.
pub(crate) fn in_chunks<T: Send, R: Send>(
    items: &mut [T],
    each: usize,
    task: impl Fn(usize, &mut [T]) -> R + Sync,
) -> Vec<R> {
    std::thread::scope(|scope| {
        let mut chunks = items.chunks_mut(each.max(1)).enumerate();
        let first = chunks.next();
        let others: Vec<_> = chunks
            .map(|(at, chunk)| {
                let task = &task;
                scope.spawn(move || task(at * each, chunk))
            })
            .collect();
        let mut results: Vec<R> = first.map(|(_, chunk)| task(0, chunk)).into_iter().collect();
        for other in others {
            results.push(
                other
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            );
        }
        results
    })
}

/// The bin of each item (of `sizes`) among `bins`: items largest first,
/// each to the bin with the least so far (the lowest-numbered on a tie).
/// No bin trails another by more than the largest item; deterministic, so
/// every process of a job computes the same placement.
pub(crate) fn balance(sizes: &[u64], bins: usize) -> Vec<usize> {
    let mut load = vec![0u64; bins.max(1)];
    let mut bin_of = vec![0; sizes.len()];
    for i in largest_first(sizes) {
        let least = (0..load.len()).min_by_key(|&b| (load[b], b)).unwrap_or(0);
        load[least] += sizes[i];
        bin_of[i] = least;
    }
    bin_of
}

/// Indexes of `sizes`, largest first (in index order among equals).
pub(crate) fn largest_first(sizes: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    order
}

/// The units (indexes of `rows`) that process `process` of `processes`
/// reads, largest first, placed by [`balance`]: every process computes
/// the same placement.
pub(crate) fn share_of_process(rows: &[u64], processes: usize, process: usize) -> Vec<usize> {
    let process_of = balance(rows, processes);
    largest_first(rows)
        .into_iter()
        .filter(|&u| process_of[u] == process)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_hand_out_every_task_once_across_threads() {
        let tickets = Tickets::new(10_000);
        let taken: Vec<Vec<usize>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| std::iter::from_fn(|| tickets.take()).collect()))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut all: Vec<usize> = taken.into_iter().flatten().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10_000).collect::<Vec<_>>());
        assert_eq!(tickets.take(), None);
    }

    #[test]
    fn in_parallel_gives_results_in_task_order() {
        assert_eq!(
            in_parallel(100, 3, |i| i * 2),
            (0..100).map(|i| i * 2).collect::<Vec<_>>()
        );
        assert!(in_parallel(0, 3, |i| i).is_empty());
    }

    #[test]
    fn balance_puts_largest_first_on_the_least_loaded_bin() {
        assert_eq!(balance(&[5, 1, 4, 3, 3], 2), vec![0, 1, 1, 1, 0]);
        assert_eq!(balance(&[7, 7], 1), vec![0, 0]);
        assert_eq!(largest_first(&[1, 5, 5, 2]), vec![1, 2, 3, 0]);
    }

    #[test]
    fn every_unit_is_read_by_one_process_largest_first_and_loads_balance() {
        for processes in [1, 2, 3, 5] {
            // Row counts of 1 to 2^20, spread by a multiplicative hash.
            let rows: Vec<u64> = (0..23u64)
                .map(|i| {
                    1 + ((i + 23 * processes as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44)
                })
                .collect();
            let shares: Vec<Vec<usize>> = (0..processes)
                .map(|p| share_of_process(&rows, processes, p))
                .collect();
            let mut all: Vec<usize> = shares.concat();
            all.sort_unstable();
            assert_eq!(all, (0..rows.len()).collect::<Vec<_>>(), "{processes}");
            for share in &shares {
                assert!(share.windows(2).all(|w| rows[w[0]] >= rows[w[1]]));
            }
            let loads: Vec<u64> = shares
                .iter()
                .map(|share| share.iter().map(|&u| rows[u]).sum())
                .collect();
            let spread = loads.iter().max().unwrap() - loads.iter().min().unwrap();
            assert!(spread <= *rows.iter().max().unwrap(), "{loads:?}");
        }
    }
}
