//! The generator's own host, read from Linux's `/proc` and `/sys`: this process's CPU time and
//! resident memory, and the CPU package energy counter (RAPL) when it is readable.
//!
//! Elsewhere (or without permission) each reading is `None` and the reason is kept, so the
//! report can say "not measured: permission denied" rather than show a zero.

use std::path::Path;

/// CPU seconds (user + system) this process has used, all threads included.
pub fn process_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the ")" that closes the command name: utime and stime are the 12th and
    // 13th of those (14 and 15 over the whole line), in USER_HZ ticks (100 per second).
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Resident memory of this process, bytes.
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The CPU package energy counter (Intel RAPL through powercap).
#[derive(Debug, Clone)]
pub struct Rapl {
    energy_path: std::path::PathBuf,
    /// The counter wraps to 0 after this many µJ.
    pub max_energy_range_uj: u64,
}

impl Rapl {
    /// The first package domain, or why there is none: "not measured: …".
    pub fn open() -> Result<Rapl, String> {
        Self::open_at(Path::new("/sys/class/powercap/intel-rapl:0"))
    }

    /// A RAPL domain at `dir` (tests use a fake one).
    pub fn open_at(dir: &Path) -> Result<Rapl, String> {
        let energy_path = dir.join("energy_uj");
        let max = std::fs::read_to_string(dir.join("max_energy_range_uj"));
        match std::fs::read_to_string(&energy_path) {
            Ok(_) => Ok(Rapl {
                energy_path,
                max_energy_range_uj: max
                    .ok()
                    .and_then(|m| m.trim().parse().ok())
                    .unwrap_or(u64::MAX),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(format!(
                "not measured: permission denied reading {} (readable by root only on recent kernels)",
                energy_path.display()
            )),
            Err(_) => Err(format!(
                "not measured: no RAPL energy counter at {}",
                dir.display()
            )),
        }
    }

    /// The counter now, µJ.
    pub fn read_uj(&self) -> Option<u64> {
        std::fs::read_to_string(&self.energy_path)
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_cpu_time_and_memory() {
        if !cfg!(target_os = "linux") {
            assert!(process_cpu_seconds().is_none());
            return;
        }
        assert!(process_cpu_seconds().unwrap() >= 0.0);
        assert!(
            rss_bytes().unwrap() > 1 << 20,
            "a test binary uses more than 1 MiB"
        );
    }

    #[test]
    fn a_fake_rapl_domain_reads_and_a_missing_one_says_why() {
        let dir = std::env::temp_dir().join(format!("servebench-rapl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("energy_uj"), "123456\n").unwrap();
        std::fs::write(dir.join("max_energy_range_uj"), "262143328850\n").unwrap();
        let r = Rapl::open_at(&dir).unwrap();
        assert_eq!(r.read_uj(), Some(123_456));
        assert_eq!(r.max_energy_range_uj, 262_143_328_850);
        let missing = Rapl::open_at(&dir.join("nope")).unwrap_err();
        assert!(missing.starts_with("not measured: no RAPL"), "{missing}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
