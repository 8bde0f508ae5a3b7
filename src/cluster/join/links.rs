//! What the join's steps share: nodes (local components), their labels,
//! the links between them, and the clusters they resolve to.

use serde::{Deserialize, Serialize};

use crate::cluster::components::{Components, Label, Page};
use crate::cluster::keep_order::{KeyWords, MAX_KEY_WORDS};

/// A component of one worker's share: `(worker, local root)`.
pub(crate) type Node = (u32, Page);

/// A local component's least label as the join carries it: a [`Label`]
/// when the run orders pages by keys, an [`IdLabel`] when by corpus and id
/// alone. The join's records are its traffic and most of its workers'
/// memory, and eight unused key words were half of each.
pub(crate) trait JoinLabel:
    Copy + Ord + std::fmt::Debug + Serialize + for<'de> Deserialize<'de> + Send + 'static
{
    /// After every real label: a node's until its own link comes.
    const NONE: Self;
    /// The least label of a local component.
    fn of(components: &Components, root: Page) -> Self;
    fn id(&self) -> i64;
    /// Whether the labelled page ranks first (a corpus page).
    fn ranks_first(&self) -> bool;
    /// What a joined cluster carries of its representative's keys:
    /// nothing for a label without keys.
    type Keys: RepresentativeKeys;
    fn keys(&self) -> Self::Keys;
}

/// A joined cluster's representative's keys as the join sends them with
/// it: a drop under the component policy names the first key its
/// representative won by. A run without keys sends nothing (`()`), not a
/// word a cluster.
pub(crate) trait RepresentativeKeys:
    Clone + std::fmt::Debug + Serialize + for<'de> Deserialize<'de> + Send + 'static
{
    fn words(&self) -> Option<&KeyWords>;
}

impl RepresentativeKeys for () {
    fn words(&self) -> Option<&KeyWords> {
        None
    }
}

impl RepresentativeKeys for KeyWords {
    fn words(&self) -> Option<&KeyWords> {
        Some(self)
    }
}

impl JoinLabel for Label {
    const NONE: Label = Label {
        later: true,
        keys: [u32::MAX; MAX_KEY_WORDS],
        id: i64::MAX,
    };

    fn of(components: &Components, root: Page) -> Label {
        components.least(root)
    }

    fn id(&self) -> i64 {
        self.id
    }

    fn ranks_first(&self) -> bool {
        !self.later
    }

    type Keys = KeyWords;

    fn keys(&self) -> KeyWords {
        self.keys
    }
}

/// A [`Label`] without keys, in the same order as a keyless one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct IdLabel {
    pub(crate) later: bool,
    pub(crate) id: i64,
}

impl JoinLabel for IdLabel {
    const NONE: IdLabel = IdLabel {
        later: true,
        id: i64::MAX,
    };

    fn of(components: &Components, root: Page) -> IdLabel {
        let Label { later, id, .. } = components.least(root);
        IdLabel { later, id }
    }

    fn id(&self) -> i64 {
        self.id
    }

    fn ranks_first(&self) -> bool {
        !self.later
    }

    type Keys = ();

    fn keys(&self) {}
}

/// A joined local component as the join needs it: one per node it joins
/// (pages shared with the same node make one link).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound = "")]
pub(crate) struct NodeLink<L: JoinLabel> {
    pub(crate) node: Node,
    pub(crate) joins: Node,
    /// The node's least label (every link of a node carries it: a set's
    /// least is a least, whichever links reach it).
    pub(crate) least: L,
    /// What the link adds to its set's pages: on a node's first link its
    /// pages, less on every link the pages it shares through that link
    /// that another worker writes (they are counted there). A sum, so
    /// that a set's pages come right wherever its links are added up.
    pub(crate) pages: i64,
}

/// A cluster as the workers that hold its pages need it: `(id, pages,
/// whether its representative ranks first)`.
pub(crate) type ClusterOf = (i64, u32, bool);

/// A joined local component's cluster: `(worker, local root, cluster,
/// representative's keys)`.
pub(crate) type Resolved<K> = (u32, Page, ClusterOf, K);

/// The worker that owns a key (a page or a cluster id) among `peers` (also
/// a row's output part): its hash's remainder. A power of two (the usual
/// count of workers and parts) takes the hash's low bits, the same
/// remainder without a division: every output row pays for this once or
/// twice, and a division is a sizeable share of making a drop row.
pub(crate) fn owner_of(key: i64, peers: usize) -> u32 {
    let hash = xxhash_rust::xxh3::xxh3_64(&key.to_le_bytes());
    let peers = peers as u64;
    let owner = match peers.is_power_of_two() {
        true => hash & (peers - 1),
        false => hash % peers,
    };
    owner as u32
}

/// How many records ahead a random access is fetched.
pub(super) const LOOKAHEAD: usize = 16;

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cluster::join::node_forest::NodeSet;

    /// A label with no keys.
    pub(in crate::cluster::join) fn keyless(later: bool, id: i64) -> IdLabel {
        IdLabel { later, id }
    }

    #[test]
    fn labels_without_keys_order_as_keyless_labels_do_in_half_the_bytes() {
        let labels: Vec<(bool, i64)> = [i64::MIN, -3, 0, 1, 7, i64::MAX]
            .into_iter()
            .flat_map(|id| [(false, id), (true, id)])
            .collect();
        for &(a_later, a) in &labels {
            for &(b_later, b) in &labels {
                let full = |later, id| Label {
                    later,
                    id,
                    ..Label::default()
                };
                assert_eq!(
                    keyless(a_later, a).cmp(&keyless(b_later, b)),
                    full(a_later, a).cmp(&full(b_later, b)),
                    "{a_later} {a} against {b_later} {b}"
                );
            }
        }
        assert!(keyless(true, i64::MAX) <= IdLabel::NONE);
        assert!(std::mem::size_of::<NodeLink<IdLabel>>() <= 40);
        assert!(std::mem::size_of::<NodeSet<IdLabel>>() <= 32);
    }
}
