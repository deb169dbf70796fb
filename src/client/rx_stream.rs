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
//! The kernel stamps with the realtime clock. Rather than compare it with the run's anchor
//! (which NTP could slew during a long run), each read measures how long ago the bytes
//! arrived (realtime now − stamp, two readings microseconds apart) and subtracts that from
//! the monotonic time of the same moment.
//!
//! Elsewhere (no `SO_TIMESTAMPNS`, or `--arrival-clock read`) it falls back to the time the
//! read returned, and the run says which clock it used.

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
    /// When the bytes of the latest read reached the socket (kernel stamp), if known.
    last_arrival: Option<Instant>,
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
                last_arrival: None,
            },
            kernel,
        )
    }

    /// When the bytes of the latest read arrived, by the kernel's stamp; `None` when the
    /// read carried no stamp (stamping off or unsupported).
    pub fn last_arrival(&self) -> Option<Instant> {
        self.last_arrival
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

/// The monotonic instant of a realtime kernel stamp: now − (realtime now − stamp). A stamp
/// from the future or more than 10 s old (a clock step) is not trusted.
///
/// The realtime reading is bracketed by two monotonic ones and paired with their midpoint:
/// a thread preempted between two unbracketed readings (a loaded machine) would date the
/// arrival too early by the preemption. The tightest of a few brackets is kept, so the
/// pairing error is at most half of it (normally well under a microsecond).
fn arrival_instant(stamp_since_epoch: Duration) -> Option<Instant> {
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
    let (_, mono_now, real_now) = best?;
    let age = real_now.checked_sub(stamp_since_epoch)?;
    if age > Duration::from_secs(10) {
        return None;
    }
    mono_now.checked_sub(age)
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
            this.last_arrival = None;
            return r;
        }
        loop {
            ready!(this.inner.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            // `try_io` clears the readiness on WouldBlock, so the next poll registers again.
            let inner = &this.inner;
            let result = {
                let cmsg = &mut this.cmsg;
                let last = &mut this.last_arrival;
                inner.try_io(Interest::READABLE, || {
                    let mut me = Recv {
                        fd: inner.as_raw_fd(),
                        cmsg,
                        last,
                    };
                    me.recv(unfilled)
                })
            };
            match result {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// The pieces of an `RxStream` a `recvmsg` needs, borrowed apart from the stream so the
/// read can run inside `try_io`.
struct Recv<'a> {
    fd: std::os::fd::RawFd,
    cmsg: &'a mut Vec<u8>,
    last: &'a mut Option<Instant>,
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
        *self.last = stamp.and_then(arrival_instant);
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
            if rx.last_arrival().is_some() {
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
        let arrived = rx.last_arrival().expect("a kernel stamp");
        assert!(
            read_returned.duration_since(arrived) >= Duration::from_millis(25),
            "arrival {:?} before the read returned",
            read_returned.duration_since(arrived)
        );
    }
}
