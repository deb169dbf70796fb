//! CPU time of the generator's own threads, so a run can tell when the client, not the
//! server, was the bottleneck. Threads register themselves; the in-process simulator's
//! threads do not, so its work is never charged to the client.

use std::sync::{Arc, Mutex};

/// CPU seconds of each thread, by its `/proc` stat path.
pub type CpuSnapshot = std::collections::HashMap<String, f64>;

/// The set of threads that make up the load generator.
#[derive(Debug, Clone, Default)]
pub struct ThreadCpu {
    tasks: Arc<Mutex<Vec<String>>>,
}

impl ThreadCpu {
    /// Registers the calling thread (Linux: `/proc/thread-self`; elsewhere a no-op).
    pub fn register_current(&self) {
        if let Ok(target) = std::fs::read_link("/proc/thread-self") {
            // "PID/task/TID" → read later as /proc/PID/task/TID/stat
            let path = format!("/proc/{}/stat", target.display());
            self.tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(path);
        }
    }

    /// User + system CPU seconds used so far by registered threads (threads that have
    /// exited are no longer counted, so read this while they run).
    pub fn cpu_seconds(&self) -> f64 {
        self.per_thread().values().sum()
    }

    /// CPU seconds of each registered thread still running, by its `/proc` path.
    pub fn per_thread(&self) -> CpuSnapshot {
        let ticks_per_s = 100.0; // USER_HZ is 100 on every Linux this runs on
        let tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        tasks
            .iter()
            .filter_map(|p| Some((p.clone(), std::fs::read_to_string(p).ok()?)))
            .filter_map(|(p, s)| {
                // Fields after the ")" that closes the command name: state is field 3,
                // utime 14 and stime 15 (1-based over the whole line).
                let rest = &s[s.rfind(')')? + 2..];
                let f: Vec<&str> = rest.split_whitespace().collect();
                let utime: f64 = f.get(11)?.parse().ok()?;
                let stime: f64 = f.get(12)?.parse().ok()?;
                Some((p, (utime + stime) / ticks_per_s))
            })
            .collect()
    }

    /// CPU seconds the registered threads used since `before`, counted per thread: a
    /// thread that ended in between (the warm-up's feeder) drops out of both sides instead
    /// of making the difference negative; its last moments are not counted.
    pub fn cpu_seconds_since(&self, before: &CpuSnapshot) -> f64 {
        self.per_thread()
            .iter()
            .map(|(p, now)| (now - before.get(p).copied().unwrap_or(0.0)).max(0.0))
            .sum()
    }

    /// Number of registered threads.
    pub fn threads(&self) -> usize {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// Lowers the calling thread's priority (niceness about 10 on Linux), for the generator's
/// helper threads: building requests and settling records can wait a few milliseconds,
/// reading a socket cannot. Without this, at a wave of requests (1,024 streams ending
/// together) the feeder and the writer took the reading thread's core in scheduler slices
/// of several milliseconds, and chunks piled up unread. Best effort: a platform that
/// refuses leaves the priority as it was.
pub fn lower_current_thread_priority() {
    if let Ok(p) = thread_priority::ThreadPriorityValue::try_from(25u8) {
        let _ = thread_priority::set_current_thread_priority(
            thread_priority::ThreadPriority::Crossplatform(p),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_of_a_busy_registered_thread_becomes_visible() {
        let cpu = ThreadCpu::default();
        let c = cpu.clone();
        let seen = std::thread::spawn(move || {
            c.register_current();
            let mut x = 0u64;
            // Spin until the kernel's counter shows this thread's work (bounded, in case
            // /proc is not there: then nothing is registered and nothing is asserted).
            for _ in 0..2_000 {
                for _ in 0..1_000_000 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
                if c.cpu_seconds() >= 0.02 {
                    return true;
                }
            }
            false
        })
        .join()
        .unwrap();
        if cpu.threads() > 0 {
            assert!(seen);
        }
    }

    #[test]
    fn a_thread_that_ended_since_the_snapshot_is_not_a_negative_time() {
        // A snapshot that holds a thread gone since (the warm-up's feeder), with 14 s of CPU.
        let cpu = ThreadCpu::default();
        let mut before = CpuSnapshot::new();
        before.insert("/proc/self/task/999999999/stat".into(), 14.0);
        assert_eq!(cpu.cpu_seconds_since(&before), 0.0);
        cpu.register_current();
        let mut now = cpu.per_thread();
        for v in now.values_mut() {
            *v = (*v - 0.5).max(0.0);
        }
        now.extend(before);
        assert!(cpu.cpu_seconds_since(&now) >= 0.0);
    }
}
