//! The threads and sockets of one listener, and how they all stop.

use super::IO_SLICE;
use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// Stop flag, open sockets and threads of one listener, shared by its threads.
pub(super) struct Runtime {
    stop: AtomicBool,
    next_id: AtomicU64,
    pub(super) sockets: Mutex<HashMap<u64, TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Runtime {
    pub(super) fn new() -> Runtime {
        Runtime {
            stop: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            sockets: Mutex::default(),
            threads: Mutex::default(),
        }
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Keeps a handle on `tcp` so that `shutdown` can close it; sets the I/O time-outs.
    pub(super) fn track(&self, tcp: &TcpStream) -> u64 {
        let _ = tcp.set_read_timeout(Some(IO_SLICE));
        let _ = tcp.set_write_timeout(Some(IO_SLICE));
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if let Ok(clone) = tcp.try_clone() {
            self.sockets.lock().unwrap().insert(id, clone);
        }
        if self.stopping() {
            let _ = tcp.shutdown(Shutdown::Both);
        }
        id
    }

    /// Drops the handle (the socket closes once its owner drops it too).
    pub(super) fn untrack(&self, id: u64) {
        self.sockets.lock().unwrap().remove(&id);
    }

    pub(super) fn spawn(&self, name: &str, f: impl FnOnce() + Send + 'static) {
        let handle = thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .expect("spawn a hostile thread");
        let mut threads = self.threads.lock().unwrap();
        threads.retain(|t| !t.is_finished());
        threads.push(handle);
    }

    /// Sets the stop flag, shuts every tracked socket down and joins every thread.
    pub(super) fn shutdown(&self) {
        self.stop.store(true, Ordering::SeqCst);
        loop {
            for s in self.sockets.lock().unwrap().values() {
                let _ = s.shutdown(Shutdown::Both);
            }
            let threads = std::mem::take(&mut *self.threads.lock().unwrap());
            if threads.is_empty() {
                break;
            }
            for t in threads {
                let _ = t.join();
            }
        }
    }
}

/// A listening socket whose accept loop hands each connection to `on_conn`.
pub(super) struct Listening {
    pub(super) addr: SocketAddr,
    pub(super) rt: Arc<Runtime>,
    accept: Option<JoinHandle<()>>,
}

impl Listening {
    pub(super) fn start(
        name: &str,
        rt: Arc<Runtime>,
        on_conn: impl Fn(TcpStream) + Send + 'static,
    ) -> Listening {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let flag = rt.clone();
        let accept = thread::Builder::new()
            .name(format!("{name}-accept"))
            .spawn(move || {
                for conn in listener.incoming() {
                    if flag.stopping() {
                        break;
                    }
                    if let Ok(tcp) = conn {
                        let _ = tcp.set_nodelay(true);
                        on_conn(tcp);
                    }
                }
            })
            .expect("spawn the accept thread");
        Listening {
            addr,
            rt,
            accept: Some(accept),
        }
    }

    pub(super) fn stop(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.rt.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept; it sees the flag and returns, dropping the listener.
        while !accept.is_finished() {
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
            thread::sleep(Duration::from_millis(1));
        }
        let _ = accept.join();
        self.rt.shutdown();
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop();
    }
}
