//! Near-duplicate clusters as differential-dataflow collections: pairs in,
//! each page with its cluster's representative out.
//!
//! Clusters are the connected components of the pair graph. Every page gets a
//! label, `(rank, id)`, and differential's label propagation gives each page
//! the least label of its component: that label's page is the cluster's
//! representative, the page to keep. With `corpus_wins`, pages already in the
//! corpus rank before new ones, so a cluster that holds an old page keeps it;
//! ties go to the smallest id.

use differential_dataflow::algorithms::graphs::propagate::propagate;
use differential_dataflow::VecCollection;

use crate::parquet_io::input::PairEdge;

/// A page's label: lower wins. `rank` 0 is a page already in the corpus
/// (with `corpus_wins`), 1 a new page.
pub type Label = (u8, i64);

/// One page of the output: `(id, representative's label)`.
pub type Member = (i64, Label);

/// Each page of `pairs` with the least label of its connected component:
/// its cluster's representative.
pub fn representatives<'scope>(
    pairs: VecCollection<'scope, u64, PairEdge>,
    corpus_wins: bool,
) -> VecCollection<'scope, u64, (i64, Label)> {
    // A page is in the corpus when it is the corpus side of a pair that is not
    // a `--self` pair; a query id is always a new page.
    let pages = pairs
        .clone()
        .flat_map(|(q, c, self_pair)| [(q, false), (c, !self_pair)])
        .reduce(|_id, sides, out| {
            let in_corpus = sides.iter().any(|(in_corpus, _)| **in_corpus);
            out.push((in_corpus, 1isize));
        })
        .map(move |(id, in_corpus)| {
            let rank = if corpus_wins && in_corpus { 0 } else { 1 };
            (id, (rank, id))
        });
    let edges = pairs.flat_map(|(q, c, _)| [(q, c), (c, q)]);
    propagate(edges, pages)
}
