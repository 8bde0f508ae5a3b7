//! The start-up handshake: timely's (lower-numbered processes accept,
//! higher ones connect and send their index as a big-endian u64), with a
//! deadline, and a heartbeat connection beside each timely one. The
//! accepting side answers with a [`GREETING`], so that a process that
//! reaches another program on a peer's port stops at once; a process that
//! cannot listen on its own port tells its peers ([`listen`]).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use socket2::{SockRef, TcpKeepalive};

use super::abort::{abort, LOST_PEER_EXIT};
use super::terms::{Terms, FAILED};
use crate::exec::liveness::Heartbeats;

/// How long a connecting peer has to send its index.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Pause between connection attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Marks, in the handshake, a peer's heartbeat connection (as opposed to
/// its timely connection).
const HEARTBEAT_CONNECTION: u64 = 1 << 63;

/// Marks, in the handshake, a connection that only brings a lower-numbered
/// peer's failure before starting: one that cannot listen on its port
/// tells the higher-numbered peers so, since on that port they may find a
/// program that accepts and never answers.
const FAILURE_NOTICE: u64 = 1 << 62;

/// TCP keepalive: probes after this long idle, every `KEEPALIVE_INTERVAL`,
/// `KEEPALIVE_RETRIES` times, before the kernel fails the connection.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);

const KEEPALIVE_RETRIES: u32 = 3;

/// A process's connections to its peers, by peer index (none to itself).
pub(super) type PeerSockets = Vec<Option<TcpStream>>;

/// How long a failed process tries to reach its peers to tell them.
pub(super) const TELL_TIMEOUT: Duration = Duration::from_secs(10);

/// The heartbeats of a job's previous stage, kept while the next one
/// connects, and how long a peer that closed them has to join it.
pub(super) type PreviousStage<'a> = Option<(&'a Heartbeats, Duration)>;

/// Connects this process to every other one, twice (timely's connection
/// and a heartbeat connection): it accepts the higher-numbered processes on
/// its own address and connects to the lower-numbered ones, until all are
/// connected or `timeout` has passed. A peer that closed its heartbeats of
/// the `previous` stage and has not joined within its grace is lost: the
/// process stops as on a peer lost mid-stage, rather than waiting out
/// `timeout` (every peer keeps its beats until all have joined, so none
/// closes them on its way here).
pub(super) fn connect_peers(
    addresses: &[String],
    me: usize,
    timeout: Duration,
    previous: PreviousStage<'_>,
) -> Result<(PeerSockets, PeerSockets)> {
    let deadline = Instant::now() + timeout;
    let mut lost_since: Option<Instant> = None;
    let listener = listen(addresses, me, timeout)?;
    listener
        .set_nonblocking(true)
        .context("cannot configure the listening socket")?;
    let mut sockets: PeerSockets = addresses.iter().map(|_| None).collect();
    let mut heartbeats: PeerSockets = addresses.iter().map(|_| None).collect();
    loop {
        for peer in 0..me {
            if sockets[peer].is_none() || heartbeats[peer].is_none() {
                if let Some((timely, heartbeat)) =
                    try_connect(&addresses[peer], me).map_err(|e| {
                        anyhow!("process {me}: process {peer} ({}) {e}", addresses[peer])
                    })?
                {
                    sockets[peer] = Some(timely);
                    heartbeats[peer] = Some(heartbeat);
                }
            }
        }
        accept_waiting(&listener, me, &mut sockets, &mut heartbeats)?;
        let missing: Vec<usize> = (0..addresses.len())
            .filter(|&p| p != me && (sockets[p].is_none() || heartbeats[p].is_none()))
            .collect();
        if missing.is_empty() {
            tracing::info!(process = me, peers = addresses.len(), "processes connected");
            return Ok((sockets, heartbeats));
        }
        if let Some((beats, grace)) = previous {
            let lost = beats.closed().into_iter().find(|p| missing.contains(p));
            if let Some(peer) = lost {
                let since = *lost_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= grace {
                    abort(
                        LOST_PEER_EXIT,
                        &format!(
                            "error: lost process {peer} ({}) between stages: its connection closed and it did not join the next stage within {}s (--peer-timeout); stopping without _SUCCESS",
                            addresses[peer],
                            grace.as_secs_f64()
                        ),
                    );
                }
            }
        }
        if Instant::now() >= deadline {
            let names: Vec<String> = missing
                .iter()
                .map(|&p| format!("process {p} ({})", addresses[p]))
                .collect();
            bail!(
                "process {me}: gave up after {}s (--connect-timeout): not connected to {}",
                timeout.as_secs_f64(),
                names.join(", ")
            );
        }
        std::thread::sleep(RETRY_PAUSE);
    }
}

/// Listens on this process's address. A port another program holds is
/// told at once to every peer, which would otherwise wait out
/// `--connect-timeout` for this process (the higher-numbered ones would
/// find that program there, and one that never answers cannot be told
/// from a busy peer: see [`GREETING`]).
fn listen(addresses: &[String], me: usize, timeout: Duration) -> Result<TcpListener> {
    let error = match TcpListener::bind(&addresses[me]) {
        Ok(listener) => return Ok(listener),
        Err(e) if e.kind() == ErrorKind::AddrInUse => anyhow!(
            "process {me}: cannot listen on {}: {e}; is another program using the port?",
            addresses[me]
        ),
        Err(e) => anyhow!("process {me}: cannot listen on {}: {e}", addresses[me]),
    };
    tell_peers_unconnected(addresses, me, &error, timeout.min(TELL_TIMEOUT));
    Err(error)
}

/// Tells each peer reached within `timeout` that this process failed
/// before starting, and why, as [`super::tell_peers_of_failure`] does once
/// connected to all: a lower-numbered peer as this process would connect
/// to it, a higher-numbered one on a [`FAILURE_NOTICE`] connection.
fn tell_peers_unconnected(
    addresses: &[String],
    me: usize,
    error: &anyhow::Error,
    timeout: Duration,
) {
    let deadline = Instant::now() + timeout;
    let failed = Terms::error(FAILED, error).encode();
    let mut untold: Vec<usize> = (0..addresses.len()).filter(|&peer| peer != me).collect();
    let told = |peer: usize| match peer < me {
        true => match try_connect(&addresses[peer], me) {
            Ok(Some((_timely, mut heartbeat))) => heartbeat.write_all(&failed).is_ok(),
            Ok(None) => false,
            Err(_) => true,
        },
        false => send_failure_notice(&addresses[peer], me, &failed),
    };
    while !untold.is_empty() && Instant::now() < deadline {
        untold.retain(|&peer| !told(peer));
        if !untold.is_empty() {
            std::thread::sleep(RETRY_PAUSE);
        }
    }
}

/// A peer's address, resolved (the first, if it names several).
fn resolve(address: &str) -> Option<SocketAddr> {
    address.to_socket_addrs().ok()?.next()
}

/// A connection to `target`, if it takes one within a second.
fn dial(target: SocketAddr) -> Option<TcpStream> {
    TcpStream::connect_timeout(&target, Duration::from_secs(1)).ok()
}

/// Sends `failed` (encoded [`Terms`]) to a higher-numbered peer on a
/// [`FAILURE_NOTICE`] connection; whether its address took it. The peer
/// reads it when it next accepts, even after this process is gone.
fn send_failure_notice(address: &str, me: usize, failed: &[u8]) -> bool {
    let Some(mut stream) = resolve(address).and_then(dial) else {
        return false;
    };
    let notice = (me as u64 | FAILURE_NOTICE).to_be_bytes();
    stream
        .write_all(&notice)
        .and_then(|()| stream.write_all(failed))
        .is_ok()
}

/// What a process sends back once a peer has introduced itself, so that
/// the peer knows it reached neardup, not another program on the port.
const GREETING: &[u8; 8] = b"neardup\n";

/// One attempt to connect to a lower-numbered peer and introduce ourselves,
/// on timely's connection and then on the heartbeat connection: `None` if
/// it is not reached (yet), an error if another program answers there.
fn try_connect(address: &str, me: usize) -> Result<Option<(TcpStream, TcpStream)>> {
    let Some(target) = resolve(address) else {
        return Ok(None);
    };
    let introduce = |index: u64| -> Result<Option<TcpStream>> {
        let Some(mut stream) = dial(target) else {
            return Ok(None);
        };
        let sent = configure(&stream).and_then(|()| stream.write_all(&index.to_be_bytes()));
        if sent.is_err() {
            return Ok(None);
        }
        match hear_greeting(&mut stream) {
            Greeting::Neardup => Ok(Some(stream)),
            // Not accepted yet (a busy peer), or the peer just stopped.
            Greeting::Nothing => Ok(None),
            Greeting::Other => {
                bail!("answered, but not as neardup: another program is on its port")
            }
        }
    };
    let Some(timely) = introduce(me as u64)? else {
        return Ok(None);
    };
    let Some(heartbeat) = introduce(me as u64 | HEARTBEAT_CONNECTION)? else {
        return Ok(None);
    };
    Ok(Some((timely, heartbeat)))
}

/// What came back on a connection once this process introduced itself.
enum Greeting {
    Neardup,
    Other,
    Nothing,
}

/// Reads a peer's [`GREETING`] (within [`HANDSHAKE_TIMEOUT`]).
fn hear_greeting(stream: &mut TcpStream) -> Greeting {
    let mut heard = [0u8; GREETING.len()];
    let mut got = 0;
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    while got < heard.len() {
        match stream.read(&mut heard[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
        if heard[..got] != GREETING[..got] {
            return Greeting::Other;
        }
    }
    let _ = stream.set_read_timeout(None);
    match got == heard.len() {
        true => Greeting::Neardup,
        false => Greeting::Nothing,
    }
}

/// No Nagle delay (timely's messages are latency-bound), and TCP keepalive.
fn configure(stream: &TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let keepalive = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    SockRef::from(stream).set_tcp_keepalive(&keepalive)
}

/// Accepts every pending connection from a higher-numbered peer, or fails
/// on a lower-numbered one's [`FAILURE_NOTICE`]. A connection that does
/// not introduce itself as a peer (a port scanner, a stray client) is
/// dropped.
fn accept_waiting(
    listener: &TcpListener,
    me: usize,
    sockets: &mut [Option<TcpStream>],
    heartbeats: &mut [Option<TcpStream>],
) -> Result<()> {
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) => {
                tracing::warn!("accepting a peer failed: {e}");
                return Ok(());
            }
        };
        let Some((index, stream)) = read_peer_index(stream) else {
            tracing::warn!("dropped a connection that is not a peer of this run");
            continue;
        };
        if index & FAILURE_NOTICE != 0 {
            read_failure_notice(stream, me, index & !FAILURE_NOTICE)?;
            continue;
        }
        let peer = (index & !HEARTBEAT_CONNECTION) as usize;
        if peer <= me || peer >= sockets.len() {
            tracing::warn!("dropped a connection that is not a peer of this run");
            continue;
        }
        let mut stream = stream;
        if stream.write_all(GREETING).is_err() {
            continue;
        }
        match index & HEARTBEAT_CONNECTION {
            0 => sockets[peer] = Some(stream),
            _ => heartbeats[peer] = Some(stream),
        }
    }
}

/// The error a lower-numbered `peer` sent on a [`FAILURE_NOTICE`]
/// connection (one that sends none is dropped).
fn read_failure_notice(mut stream: TcpStream, me: usize, peer: u64) -> Result<()> {
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let Some(notice) = Terms::decode(&mut stream) else {
        tracing::warn!("dropped a connection that is not a peer of this run");
        return Ok(());
    };
    match notice.error_under(FAILED) {
        Some(error) if peer < me as u64 => {
            bail!("process {me}: process {peer} failed before starting: {error}")
        }
        _ => Ok(()),
    }
}

fn read_peer_index(mut stream: TcpStream) -> Option<(u64, TcpStream)> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).ok()?;
    let mut index = [0u8; 8];
    stream.read_exact(&mut index).ok()?;
    stream.set_read_timeout(None).ok()?;
    configure(&stream).ok()?;
    Some((u64::from_be_bytes(index), stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_names_the_peer_that_never_came() {
        let addresses = vec![free_address(), free_address()];
        let error = connect_peers(&addresses, 0, Duration::from_millis(300), None)
            .unwrap_err()
            .to_string();
        let expected = format!("not connected to process 1 ({})", addresses[1]);
        assert!(error.contains(&expected), "{error}");
    }

    fn free_address() -> String {
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().to_string()
    }

    #[test]
    fn two_peers_connect_with_the_timely_handshake_and_a_heartbeat_connection() {
        let addresses = vec![free_address(), free_address()];
        let second = addresses.clone();
        let joiner = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            connect_peers(&second, 1, Duration::from_secs(10), None).unwrap()
        });
        let (sockets, heartbeats) =
            connect_peers(&addresses, 0, Duration::from_secs(10), None).unwrap();
        let (their_sockets, their_heartbeats) = joiner.join().unwrap();
        assert!(sockets[0].is_none() && sockets[1].is_some());
        assert!(their_sockets[0].is_some() && their_sockets[1].is_none());
        // Keepalive is on for both connections, on both sides.
        for socket in [
            &sockets[1],
            &heartbeats[1],
            &their_sockets[0],
            &their_heartbeats[0],
        ] {
            let socket = socket.as_ref().unwrap();
            assert!(SockRef::from(socket).keepalive().unwrap());
        }
        // The two connections are told apart: a byte on one side's timely
        // socket arrives on the other's timely socket, not its heartbeat.
        let mut theirs = their_sockets[0].as_ref().unwrap();
        theirs.write_all(b"t").unwrap();
        let mut heartbeat = their_heartbeats[0].as_ref().unwrap();
        heartbeat.write_all(b"h").unwrap();
        let mut byte = [0u8; 1];
        sockets[1].as_ref().unwrap().read_exact(&mut byte).unwrap();
        assert_eq!(&byte, b"t");
        heartbeats[1]
            .as_ref()
            .unwrap()
            .read_exact(&mut byte)
            .unwrap();
        assert_eq!(&byte, b"h");
    }
}
