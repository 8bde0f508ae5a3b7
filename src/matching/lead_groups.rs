//! Tables that share their first key block: built with one pass over B
//! ([`crate::matching::tables`]) and probed with one partitioning of the
//! corpus rows ([`crate::matching::probe`]).

use crate::matching::design::Design;

/// Entries of a table slice that one partition should visit: the tables of a
/// group are probed one after another, so one table's slice of filter words
/// (2^16 or 2^17 buckets, 512 KB or 1 MiB, as |B| is a power of two or
/// not; more where the partition bits are capped) must fit in L2 beside
/// the rows.
pub(crate) const SLICE_ENTRIES_LOG2: u32 = 16;

/// Tables that share their first key block, and how to partition rows for them.
#[derive(Clone, Debug)]
pub(crate) struct LeadGroup {
    /// Partition number of a fingerprint: `(f >> shift) & mask`.
    pub(crate) shift: u32,
    pub(crate) mask: u64,
    tables: Vec<usize>,
}

impl LeadGroup {
    /// The group's tables, ascending.
    pub(crate) fn tables(&self) -> &[usize] {
        &self.tables
    }
}

/// Groups the design's tables by first key block; a group's partitions cut
/// its tables into slices of about 2^SLICE_ENTRIES_LOG2 entries.
pub(crate) fn lead_groups(design: &Design) -> Vec<LeadGroup> {
    lead_groups_with(design, SLICE_ENTRIES_LOG2)
}

/// Like [`lead_groups`], with slices of about `2^slice_log2` entries.
pub(crate) fn lead_groups_with(design: &Design, slice_log2: u32) -> Vec<LeadGroup> {
    let stored_log2 = 63 - design.stored.max(1).leading_zeros();
    let mut groups: Vec<(usize, LeadGroup)> = Vec::new();
    for (t, spec) in design.tables.iter().enumerate() {
        let lead = spec.blocks[0];
        if let Some((_, g)) = groups.iter_mut().find(|(b, _)| *b == lead) {
            g.tables.push(t);
            continue;
        }
        let block = design.blocks[lead];
        let bits = stored_log2
            .saturating_sub(slice_log2)
            .min(block.len)
            .min(spec.index_bits)
            .min(12);
        let shift = 64 - block.start - bits;
        groups.push((
            lead,
            LeadGroup {
                shift,
                mask: (1u64 << bits) - 1,
                tables: vec![t],
            },
        ));
    }
    groups.into_iter().map(|(_, g)| g).collect()
}
