//! A TCP stream that knows when its bytes arrived: the kernel's receive timestamp.
//!
//! A read's return time includes however long user space took to get round to the socket: a
//! busy worker thread, the record writer or the open-loop dispatcher running on the same
//! core all push it later, and it is then the client's own load, not the server, that shows
//! in TTFT and ITL. On Linux the kernel stamps each packet when it arrives
//! (`SO_TIMESTAMPNS`), and `recvmsg` hands that stamp back with the bytes. This stream reads
//! with `recvmsg`, keeps the stamp of the latest read, and turns it into a monotonic
//! `Instant` the run clock understands. TLS runs on top of it, so a TLS record takes the
//! stamp of the read that completed it.
//!
//! The kernel stamps with the realtime clock. On Linux the realtime and monotonic clocks run
//! at the same NTP-disciplined rate, so their difference changes only when the realtime clock
//! is stepped. Each reading thread measures that difference (a realtime reading bracketed by
//! two monotonic ones) and re-measures it every [`OFFSET_REFRESH`]; a read's stamp is moved
//! onto the monotonic clock with it. Measuring it at every read cost three clock readings per
//! read, a tenth of the client's own CPU at 256 streams; a step in the realtime clock can now
//! misdate reads for at most one refresh period, and a stamp that lands after the read's
//! return or more than 10 s before it is not trusted.
//!
//! Elsewhere (no `SO_TIMESTAMPNS`, or `--arrival-clock read`) it falls back to the time the
//! read returned, and the run says which clock it used.

use std::cell::Cell;
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// A TCP stream that remembers when the bytes of its latest read arrived.
pub struct RxStream {
    inner: TcpStream,
    /// Kernel receive timestamps were asked for.
    kernel: bool,
    /// Control-message space for one timestamp, reused across reads.
    cmsg: Vec<u8>,
    /// When the bytes of the latest read reached the socket, as the kernel stamped it
    /// (realtime since the epoch), if known.
    last_stamp: Option<Duration>,
}

impl RxStream {
    /// Wraps `inner`; with `kernel_timestamps`, asks the kernel to stamp received packets.
    /// Returns whether stamping could be turned on.
    pub fn new(inner: TcpStream, kernel_timestamps: bool) -> (Self, bool) {
        let kernel = kernel_timestamps && enable_timestamps(&inner);
        (
            Self {
                inner,
                kernel,
                cmsg: nix::cmsg_space!(nix::sys::time::TimeSpec),
                last_stamp: None,
            },
            kernel,
        )
    }

    /// When the bytes of the latest read arrived, by the kernel's stamp, on the monotonic
    /// clock; `None` when the read carried no stamp (stamping off or unsupported) or the
    /// stamp is not to be trusted. `read_returned` is the monotonic time the read returned,
    /// taken by the caller (one clock reading per read).
    pub fn last_arrival(&self, read_returned: Instant) -> Option<Instant> {
        arrival_instant(self.last_stamp?, read_returned)
    }

    /// The TCP stream.
    pub fn tcp(&self) -> &TcpStream {
        &self.inner
    }
}

/// Turns on `SO_TIMESTAMPNS`; false where the platform refuses.
fn enable_timestamps(tcp: &TcpStream) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        nix::sys::socket::setsockopt(tcp, nix::sys::socket::sockopt::ReceiveTimestampns, &true)
            .is_ok()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = tcp;
        false
    }
}

/// How often each reading thread re-measures realtime − monotonic: the longest a step of the
/// realtime clock can misdate reads.
pub const OFFSET_REFRESH: Duration = Duration::from_millis(100);

thread_local! {
    /// This thread's latest measurement: (monotonic instant, realtime since the epoch at
    /// that instant).
    static CLOCK_PAIR: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
}

/// A monotonic instant paired with the realtime reading of the same moment. The realtime
/// reading is bracketed by two monotonic ones and paired with their midpoint: a thread
/// preempted between two unbracketed readings (a loaded machine) would date every arrival
/// too early by the preemption. The tightest of a few brackets is kept, so the pairing error
/// is at most half of it (normally well under a microsecond).
fn measure_clock_pair() -> Option<(Instant, Duration)> {
    let mut best: Option<(Duration, Instant, Duration)> = None;
    for _ in 0..4 {
        let before = Instant::now();
        let real = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        let after = Instant::now();
        let width = after - before;
        if best.is_none_or(|(w, _, _)| width < w) {
            best = Some((width, before + width / 2, real));
        }
        if width < Duration::from_micros(5) {
            break;
        }
    }
    best.map(|(_, mono, real)| (mono, real))
}

/// This thread's clock pair, re-measured when older than [`OFFSET_REFRESH`] at `now`.
fn clock_pair(now: Instant) -> Option<(Instant, Duration)> {
    CLOCK_PAIR.with(|cell| match cell.get() {
        Some((mono, real)) if now.saturating_duration_since(mono) < OFFSET_REFRESH => {
            Some((mono, real))
        }
        _ => {
            let pair = measure_clock_pair();
            cell.set(pair);
            pair
        }
    })
}

/// The monotonic instant of a realtime kernel stamp, from the thread's clock pair:
/// mono_ref + (stamp − real_ref). A stamp after the read's return by more than 2 µs (the
/// pairing's error: half the bracket, normally well under a microsecond) or more than 10 s before it (a clock step) is not trusted.
fn arrival_instant(stamp_since_epoch: Duration, read_returned: Instant) -> Option<Instant> {
    let (mono_ref, real_ref) = clock_pair(read_returned)?;
    let arrived = if stamp_since_epoch >= real_ref {
        mono_ref.checked_add(stamp_since_epoch - real_ref)?
    } else {
        mono_ref.checked_sub(real_ref - stamp_since_epoch)?
    };
    // The pairing is good to about a microsecond: an arrival dated just after the return is
    // that error, and is clamped to the return.
    let slack = Duration::from_micros(2);
    if arrived > read_returned + slack {
        return None;
    }
    let arrived = arrived.min(read_returned);
    if read_returned - arrived > Duration::from_secs(10) {
        return None;
    }
    Some(arrived)
}

impl AsyncRead for RxStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.kernel {
            let r = Pin::new(&mut this.inner).poll_read(cx, buf);
            this.last_stamp = None;
            return r;
        }
        loop {
            ready!(this.inner.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let len = unfilled.len();
            let inner = &this.inner;
            // `try_io` clears the readiness when its closure says WouldBlock, so the next poll
            // waits for the next edge. A read shorter than the buffer drained the socket, so
            // it says WouldBlock too, with its bytes kept aside: otherwise every wake-up would
            // cost a second `recvmsg` that only finds the socket empty (tokio's own
            // `TcpStream` skips that call the same way; a new arrival in between sets the
            // readiness again, so nothing is missed).
            let mut drained = None;
            let result = {
                let cmsg = &mut this.cmsg;
                let last = &mut this.last_stamp;
                inner.try_io(Interest::READABLE, || {
                    let mut me = Recv {
                        fd: inner.as_raw_fd(),
                        cmsg,
                        last,
                    };
                    let n = me.recv(unfilled)?;
                    if n > 0 && n < len {
                        drained = Some(n);
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                    Ok(n)
                })
            };
            match (result, drained) {
                (_, Some(n)) | (Ok(n), None) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                (Err(e), None) if e.kind() == io::ErrorKind::WouldBlock => continue,
                (Err(e), None) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// The pieces of an `RxStream` a `recvmsg` needs, borrowed apart from the stream so the
/// read can run inside `try_io`.
struct Recv<'a> {
    fd: std::os::fd::RawFd,
    cmsg: &'a mut Vec<u8>,
    last: &'a mut Option<Duration>,
}

impl Recv<'_> {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
        let mut iov = [io::IoSliceMut::new(buf)];
        let msg = recvmsg::<()>(self.fd, &mut iov, Some(self.cmsg), MsgFlags::empty())
            .map_err(io::Error::from)?;
        let n = msg.bytes;
        let mut stamp = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::ScmTimestampns(ts) = c {
                    stamp = Some(Duration::new(ts.tv_sec() as u64, ts.tv_nsec() as u32));
                }
            }
        }
        *self.last = stamp;
        Ok(n)
    }
}

impl AsyncWrite for RxStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Bytes written to a loopback socket and read after a delay carry their arrival time,
    /// not the read's: the stamp is at least the delay earlier than the read's return.
    #[tokio::test]
    async fn kernel_stamp_precedes_a_late_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (mut server_side, _) = listener.accept().await.unwrap();
        let (mut rx, kernel) = RxStream::new(tcp, true);
        if !cfg!(target_os = "linux") {
            assert!(!kernel);
            return;
        }
        assert!(kernel, "SO_TIMESTAMPNS is available on Linux");
        // The kernel turns receive timestamping on asynchronously the first time a socket asks
        // for it: packets that arrive before then carry no stamp (the client falls back to
        // the read's time). Ping until a stamp comes back.
        let mut buf = [0u8; 16];
        let start = Instant::now();
        loop {
            server_side.write_all(b"p").await.unwrap();
            assert_eq!(rx.read(&mut buf).await.unwrap(), 1);
            if rx.last_arrival(Instant::now()).is_some() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no kernel stamp ever came"
            );
            tokio::task::yield_now().await;
        }
        server_side.write_all(b"hello").await.unwrap();
        // Let the bytes sit in the socket while this thread does something else.
        let written = Instant::now();
        while written.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        let n = rx.read(&mut buf).await.unwrap();
        let read_returned = Instant::now();
        assert_eq!(&buf[..n], b"hello");
        let arrived = rx.last_arrival(read_returned).expect("a kernel stamp");
        assert!(
            read_returned.duration_since(arrived) >= Duration::from_millis(25),
            "arrival {:?} before the read returned",
            read_returned.duration_since(arrived)
        );
    }
}
