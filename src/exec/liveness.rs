//! Liveness of a run's processes: every process hears from every peer
//! at least once per `--peer-timeout`, or stops.
//!
//! A frozen process (SIGSTOP, a machine swapping), a host that lost power
//! and a network partition close no socket, and timely only notices closed
//! sockets: its workers would wait for such a peer forever, holding the
//! machines, with nobody paged. So each pair of processes has a second
//! connection beside timely's, on which each side writes a byte four times
//! per timeout from a thread of its own. A worker busy for minutes on one
//! huge row group or a table build still beats; a process that is stopped,
//! gone or cut off does not, and its peers stop after one timeout.
//!
//! A peer that closes its side (it finished, or it died and timely reports
//! that) is no longer watched. Between a job's stages no dataflow runs to
//! report it: the next stage's connection asks [`Heartbeats::closed`],
//! since a peer keeps its beats until every process has joined that stage.
//!
//! A process that stops for a lost peer first says which on these
//! connections ([`PeerNotices::tell_lost`]). Every survivor loses that peer,
//! but one may see another survivor go first, having stopped for it: the
//! notice lets each name the process that was lost, not the first
//! survivor to stop ([`PeerNotices::lost_through`]).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::exec::parallel::lock;

/// Beats per timeout: a peer is taken as silent only after missing several.
const BEATS_PER_TIMEOUT: u32 = 4;

/// A beat's byte.
const BEAT: u8 = 1;

/// The byte that starts a notice that the sender stops for a lost process,
/// whose index follows in four bytes, little-endian.
const LOST: u8 = 2;

/// How often the beating thread looks whether it was stopped.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// The heartbeats of one run of a dataflow; stopped when the next starts
/// (a job's stages each connect anew) or when the process exits.
pub(crate) struct Heartbeats {
    stopped: Arc<AtomicBool>,
    /// The peers that closed their side.
    closed: Arc<Mutex<Vec<usize>>>,
    notices: Arc<PeerNotices>,
}

/// What peers said of a lost process before they stopped, and the
/// sockets on which to say it in turn (shut down when the beats stop).
pub(crate) struct PeerNotices {
    told: Mutex<Told>,
    changed: Condvar,
    /// The peers watched, and how long one may be silent.
    watched: Vec<usize>,
    timeout: Duration,
    sockets: Mutex<Vec<TcpStream>>,
}

/// Per peer, the process it said it stopped for; and the peers whose
/// beats ended (closed or silent).
#[derive(Default)]
struct Told {
    lost: Vec<(usize, usize)>,
    ended: Vec<usize>,
}

impl PeerNotices {
    fn record(&self, update: impl FnOnce(&mut Told)) {
        update(&mut lock(&self.told));
        self.changed.notify_all();
    }

    /// The process `peer` said it stopped for, once it says so or its
    /// beats end (at most one timeout): none if it said nothing. A peer
    /// whose dataflow connection closed has exited, or is about to, so its
    /// beats end at once.
    pub(crate) fn lost_through(&self, peer: usize) -> Option<usize> {
        if !self.watched.contains(&peer) {
            return None;
        }
        let deadline = Instant::now() + self.timeout;
        let mut told = lock(&self.told);
        loop {
            if let Some(&(_, lost)) = told.lost.iter().find(|&&(from, _)| from == peer) {
                return Some(lost);
            }
            let left = deadline.checked_duration_since(Instant::now());
            if told.ended.contains(&peer) || left.is_none() {
                return None;
            }
            told = self
                .changed
                .wait_timeout(told, left.unwrap_or_default())
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Tells every peer that this process stops for the lost process
    /// `lost` (a peer that is gone is not told).
    pub(crate) fn tell_lost(&self, lost: usize) {
        let mut notice = [LOST, 0, 0, 0, 0];
        notice[1..].copy_from_slice(&(lost as u32).to_le_bytes());
        for socket in lock(&self.sockets).iter_mut() {
            let _ = socket.write_all(&notice);
        }
    }
}

impl Heartbeats {
    /// Beats on every `(peer, socket)` and watches each peer: if one is
    /// silent for `timeout`, calls `silent` with its index (which is
    /// expected to end the process).
    pub(crate) fn start(
        peers: Vec<(usize, TcpStream)>,
        timeout: Duration,
        silent: impl Fn(usize) + Send + Sync + 'static,
    ) -> Result<Heartbeats> {
        let stopped = Arc::new(AtomicBool::new(false));
        let closed = Arc::new(Mutex::new(Vec::new()));
        let silent = Arc::new(silent);
        let notices = Arc::new(PeerNotices {
            told: Mutex::default(),
            changed: Condvar::new(),
            watched: peers.iter().map(|&(peer, _)| peer).collect(),
            timeout,
            sockets: Mutex::default(),
        });
        let mut beating = Vec::with_capacity(peers.len());
        for (peer, socket) in peers {
            socket
                .set_read_timeout(Some(timeout))
                .and_then(|()| socket.set_write_timeout(Some(timeout)))
                .context("cannot configure a heartbeat socket")?;
            let share = || {
                socket
                    .try_clone()
                    .context("cannot share a heartbeat socket")
            };
            let watched = share()?;
            beating.push(share()?);
            lock(&notices.sockets).push(socket);
            let (stopped, silent, closed) = (stopped.clone(), silent.clone(), closed.clone());
            let notices = notices.clone();
            std::thread::Builder::new()
                .name(format!("neardup:watch-{peer}"))
                .spawn(move || {
                    let heard_close = hears_until_closed(watched, |lost| {
                        notices.record(|told| told.lost.push((peer, lost)))
                    });
                    notices.record(|told| told.ended.push(peer));
                    match (stopped.load(Ordering::SeqCst), heard_close) {
                        (true, _) => {}
                        (false, true) => lock(&closed).push(peer),
                        (false, false) => silent(peer),
                    }
                })
                .context("cannot start a heartbeat thread")?;
        }
        let period = timeout / BEATS_PER_TIMEOUT;
        let flag = stopped.clone();
        std::thread::Builder::new()
            .name("neardup:beat".into())
            .spawn(move || beat(beating, period, &flag))
            .context("cannot start the heartbeat thread")?;
        Ok(Heartbeats {
            stopped,
            closed,
            notices,
        })
    }

    /// What the peers said of a lost process, and how to say it to them.
    pub(crate) fn notices(&self) -> Arc<PeerNotices> {
        self.notices.clone()
    }

    /// The peers that closed their side (finished, or gone).
    pub(crate) fn closed(&self) -> Vec<usize> {
        lock(&self.closed).clone()
    }

    /// Stops beating and watching: the peers see this side close.
    pub(crate) fn stop(self) {
        self.stopped.store(true, Ordering::SeqCst);
        for socket in lock(&self.notices.sockets).iter() {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

/// Reads the peer's beats until it closes its side (true) or is silent for
/// the socket's read timeout (false), giving `told` the process of each
/// notice that it stops for a lost one.
fn hears_until_closed(mut socket: TcpStream, mut told: impl FnMut(usize)) -> bool {
    let mut beats = [0u8; 64];
    // The bytes of a notice read so far (none: not in one).
    let mut notice: Option<Vec<u8>> = None;
    loop {
        match socket.read(&mut beats) {
            Ok(0) => return true,
            Ok(read) => {
                for &byte in &beats[..read] {
                    match notice.as_mut() {
                        Some(index) => {
                            index.push(byte);
                            if let Ok(bytes) = <[u8; 4]>::try_from(&index[..]) {
                                told(u32::from_le_bytes(bytes) as usize);
                                notice = None;
                            }
                        }
                        None if byte == LOST => notice = Some(Vec::with_capacity(4)),
                        None => {}
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            // Reset or broken: the peer is gone, which timely reports.
            Err(_) => return true,
        }
    }
}

/// Writes a byte to every peer every `period` until stopped. A write that
/// fails is the peer's end, and no longer written to.
fn beat(mut sockets: Vec<TcpStream>, period: Duration, stopped: &AtomicBool) {
    while !stopped.load(Ordering::SeqCst) {
        sockets.retain_mut(|socket| socket.write_all(&[BEAT]).is_ok());
        let mut waited = Duration::ZERO;
        while waited < period && !stopped.load(Ordering::SeqCst) {
            let step = STOP_CHECK.min(period - waited);
            std::thread::sleep(step);
            waited += step;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::mpsc;

    fn socket_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (far, _) = listener.accept().unwrap();
        (near, far)
    }

    #[test]
    fn a_peer_that_beats_is_not_silent_and_one_that_stops_beating_is() {
        let (near, far) = socket_pair();
        let (told, heard) = mpsc::channel();
        let timeout = Duration::from_millis(400);
        let told = std::sync::Mutex::new(told);
        let watching = Heartbeats::start(vec![(7, near)], timeout, move |peer| {
            let _ = told.lock().unwrap().send(peer);
        })
        .unwrap();
        // The far side beats for three timeouts: nothing is reported.
        let (far_done, _) = mpsc::channel::<()>();
        let far_copy = far.try_clone().unwrap();
        let beating = Heartbeats::start(vec![(0, far_copy)], timeout, move |_| {
            let _ = far_done.send(());
        })
        .unwrap();
        assert!(heard.recv_timeout(3 * timeout).is_err());
        // It stops beating but keeps its socket open (a frozen process):
        // reported within about one timeout.
        beating.stopped.store(true, Ordering::SeqCst);
        assert_eq!(heard.recv_timeout(10 * timeout), Ok(7));
        watching.stop();
        drop(far);
    }

    #[test]
    fn a_peer_that_stops_for_a_lost_process_names_it_to_the_others() {
        let ignore = |_| {};
        let timeout = Duration::from_secs(60);
        let (near, far) = socket_pair();
        let near = Heartbeats::start(vec![(0, near)], timeout, ignore).unwrap();
        let far = Heartbeats::start(vec![(1, far)], timeout, ignore).unwrap();
        far.notices().tell_lost(70_000);
        far.stop();
        assert_eq!(near.notices().lost_through(0), Some(70_000));
        // Not a peer of this run: nothing to wait for.
        assert_eq!(near.notices().lost_through(5), None);
        near.stop();
        // A peer that goes without a word was the one lost (its beats end
        // at once: the call does not wait out the timeout).
        let (near, far) = socket_pair();
        let near = Heartbeats::start(vec![(3, near)], timeout, ignore).unwrap();
        drop(far);
        assert_eq!(near.notices().lost_through(3), None);
        near.stop();
    }

    #[test]
    fn a_notice_is_read_whole_however_its_bytes_come() {
        let (mut near, far) = socket_pair();
        let reading = std::thread::spawn(move || {
            let mut told = Vec::new();
            hears_until_closed(far, |lost| told.push(lost));
            told
        });
        // Beats around it, and a notice cut into single bytes.
        let notice = [BEAT, LOST, 0x02, 0x01, 0, 0, BEAT, LOST, 9, 0, 0, 0];
        for byte in notice {
            near.write_all(&[byte]).unwrap();
        }
        drop(near);
        assert_eq!(reading.join().unwrap(), [0x0102, 9]);
    }

    #[test]
    fn a_peer_that_closes_its_side_is_no_longer_watched() {
        let (near, far) = socket_pair();
        let (told, heard) = mpsc::channel();
        let told = std::sync::Mutex::new(told);
        let timeout = Duration::from_millis(200);
        let watching = Heartbeats::start(vec![(1, near)], timeout, move |peer| {
            let _ = told.lock().unwrap().send(peer);
        })
        .unwrap();
        drop(far);
        assert!(heard.recv_timeout(5 * timeout).is_err());
        // Told to whoever asks: between stages, nothing else would tell.
        assert_eq!(watching.closed(), [1]);
        watching.stop();
    }
}
