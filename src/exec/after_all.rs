//! Dataflow steps that need all of their input before they can give any
//! output: the shape of every step of `cluster`'s join and of the owners
//! of joined clusters. Each absorbs its input as it comes (the frontier
//! tells when it is all in), then gives its output once or a slice at a
//! time. A step that can say part of its output early ([`as_it_comes`])
//! gives it as its input comes, and the rest at the end.

use std::cell::RefCell;
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::ParallelizationContract;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Stream;

/// Absorbs all of `input`, then (once its frontier is empty) calls `finish`
/// once with a function that gives output: the shape of every step here,
/// each of which needs all of its input before it can say anything.
pub(crate) fn after_all<'scope, D, O, P>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    absorb: impl FnMut(&mut Vec<D>) + 'static,
    mut finish: impl FnMut(&mut dyn FnMut(O)) + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
{
    after_all_in_slices(input, pact, name, absorb, move || {
        move |give: &mut dyn FnMut(O)| {
            finish(give);
            false
        }
    })
}

/// [`after_all`] for work that sorts its input: gathered into one vector
/// as it comes, rather than kept in its batches and copied at the end.
pub(crate) fn after_all_gathered<'scope, D, O, P>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    mut finish: impl FnMut(Vec<D>, &mut dyn FnMut(O)) + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
{
    let gathered = Rc::new(RefCell::new(Vec::<D>::new()));
    let absorbed = gathered.clone();
    after_all(
        input,
        pact,
        name,
        move |data| absorbed.borrow_mut().append(data),
        move |give| finish(std::mem::take(&mut *gathered.borrow_mut()), give),
    )
}

/// Work that gives its output a slice at a time: called until it returns
/// false (no more to give).
pub(crate) trait Slices<O> {
    fn next_slice(&mut self, give: &mut dyn FnMut(O)) -> bool;
}

impl<O, F: FnMut(&mut dyn FnMut(O)) -> bool> Slices<O> for F {
    fn next_slice(&mut self, give: &mut dyn FnMut(O)) -> bool {
        self(give)
    }
}

/// [`after_all`] for output too large to hold twice: once the input is all
/// in, `start` makes the work, whose slices are given one per activation of
/// the operator, so that each slice flows on to the operators downstream
/// (and their workers) before the next is made, instead of every record
/// waiting in a channel at once.
pub(crate) fn after_all_in_slices<'scope, D, O, P, S>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    mut absorb: impl FnMut(&mut Vec<D>) + 'static,
    start: impl FnOnce() -> S + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
    S: Slices<O> + 'static,
{
    let scope = input.scope();
    let step = name.to_string();
    input.unary_frontier::<CapacityContainerBuilder<Vec<O>>, _, _, _>(
        pact,
        name,
        move |capability, info| {
            let activator = scope.activator_for(info.address);
            let mut capability = Some(capability);
            let (mut start, mut work) = (Some(start), None);
            let mut started = None;
            move |(input, frontier), output| {
                input.for_each(|_time, data| absorb(data));
                if !frontier.is_empty() {
                    return;
                }
                let Some(held) = capability.as_ref() else {
                    return;
                };
                if let Some(start) = start.take() {
                    let rss_mib = crate::exec::logging::resident_mib();
                    tracing::debug!(step, ?rss_mib, "all input in");
                    started = Some(std::time::Instant::now());
                    work = Some(start());
                }
                let Some(slices) = work.as_mut() else {
                    return;
                };
                let more = {
                    let mut session = output.session(held);
                    slices.next_slice(&mut |item| session.give(item))
                };
                if more {
                    activator.activate();
                } else {
                    // What the work holds is freed now, not when the
                    // dataflow ends.
                    work = None;
                    capability = None;
                    let seconds = started.map(|t| t.elapsed().as_secs_f64());
                    let rss_mib = crate::exec::logging::resident_mib();
                    tracing::debug!(step, seconds, ?rss_mib, "all output given");
                }
            }
        },
    )
}

/// A step that gives output as its input comes: `absorb` takes each batch
/// and gives what it already can, and `finish`, once the frontier is
/// empty, gives the rest. Nothing waits for the whole input that need not.
pub(crate) fn as_it_comes<'scope, D, O, P>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    mut absorb: impl FnMut(&mut Vec<D>, &mut dyn FnMut(O)) + 'static,
    mut finish: impl FnMut(&mut dyn FnMut(O)) + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
{
    let step = name.to_string();
    input.unary_frontier::<CapacityContainerBuilder<Vec<O>>, _, _, _>(
        pact,
        name,
        move |capability, _info| {
            let mut capability = Some(capability);
            move |(input, frontier), output| {
                let Some(held) = capability.as_ref() else {
                    input.for_each(|_time, data| data.clear());
                    return;
                };
                let done = frontier.is_empty();
                {
                    let mut session = output.session(held);
                    let mut give = |item| session.give(item);
                    input.for_each(|_time, data| absorb(data, &mut give));
                    if done {
                        let rss_mib = crate::exec::logging::resident_mib();
                        tracing::debug!(step, ?rss_mib, "all input in");
                        finish(&mut give);
                    }
                }
                if done {
                    capability = None;
                    let rss_mib = crate::exec::logging::resident_mib();
                    tracing::debug!(step, ?rss_mib, "all output given");
                }
            }
        },
    )
}
