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

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::exec::parallel::lock;

/// Beats per timeout: a peer is taken as silent only after missing several.
const BEATS_PER_TIMEOUT: u32 = 4;

/// How often the beating thread looks whether it was stopped.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// The heartbeats of one run of a dataflow; stopped when the next starts
/// (a job's stages each connect anew) or when the process exits.
pub(crate) struct Heartbeats {
    stopped: Arc<AtomicBool>,
    sockets: Vec<TcpStream>,
    /// The peers that closed their side.
    closed: Arc<Mutex<Vec<usize>>>,
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
        let mut sockets = Vec::with_capacity(peers.len());
        let mut beating = Vec::with_capacity(peers.len());
        for (peer, socket) in peers {
            socket
                .set_read_timeout(Some(timeout))
                .and_then(|()| socket.set_write_timeout(Some(timeout)))
                .context("cannot configure a heartbeat socket")?;
            let watched = socket
                .try_clone()
                .context("cannot share a heartbeat socket")?;
            beating.push(
                socket
                    .try_clone()
                    .context("cannot share a heartbeat socket")?,
            );
            sockets.push(socket);
            let (stopped, silent, closed) = (stopped.clone(), silent.clone(), closed.clone());
            std::thread::Builder::new()
                .name(format!("neardup:watch-{peer}"))
                .spawn(move || {
                    let heard_close = hears_until_closed(watched);
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
            sockets,
            closed,
        })
    }

    /// The peers that closed their side (finished, or gone).
    pub(crate) fn closed(&self) -> Vec<usize> {
        lock(&self.closed).clone()
    }

    /// Stops beating and watching: the peers see this side close.
    pub(crate) fn stop(self) {
        self.stopped.store(true, Ordering::SeqCst);
        for socket in &self.sockets {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

/// Reads the peer's beats until it closes its side (true) or is silent for
/// the socket's read timeout (false).
fn hears_until_closed(mut socket: TcpStream) -> bool {
    let mut beats = [0u8; 64];
    loop {
        match socket.read(&mut beats) {
            Ok(0) => return true,
            Ok(_) => {}
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
        sockets.retain_mut(|socket| socket.write_all(&[1]).is_ok());
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
