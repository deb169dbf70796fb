//! What the client's own machine says about its network side during a run: TCP
//! retransmissions (the kernel's counters) and ephemeral ports in use towards the server.
//!
//! Users of every load generator keep finding that the client, not the server, set the
//! numbers: TIME_WAIT sockets exhausting the client's ephemeral ports, retransmissions from
//! a lossy path. These are read from `/proc` at the edges of the measured phase (Linux;
//! elsewhere they are absent and the report says so). The parsers are pure and tested on
//! captured text.

use crate::record::run::PortUse;

/// `RetransSegs` and `OutSegs` of `/proc/net/snmp` (system-wide counters).
pub fn tcp_segments() -> Option<(u64, u64)> {
    parse_snmp_tcp(&std::fs::read_to_string("/proc/net/snmp").ok()?)
}

/// Ephemeral ports in use towards `server_port` now.
pub fn ephemeral_ports(server_port: u16) -> Option<PortUse> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let (low, high) = parse_port_range(&range)?;
    let mut in_use = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            in_use += count_ports(&text, low, high, server_port);
        }
    }
    Some(PortUse {
        in_use,
        range: u64::from(high.saturating_sub(low)) + 1,
    })
}

/// (RetransSegs, OutSegs) from the two `Tcp:` lines (names, then values).
fn parse_snmp_tcp(text: &str) -> Option<(u64, u64)> {
    let mut lines = text.lines().filter(|l| l.starts_with("Tcp:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().collect();
    let values: Vec<&str> = lines.next()?.split_whitespace().collect();
    let field = |name: &str| -> Option<u64> {
        let i = names.iter().position(|n| *n == name)?;
        values.get(i)?.parse().ok()
    };
    Some((field("RetransSegs")?, field("OutSegs")?))
}

/// "low\thigh" of `ip_local_port_range`.
fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    let mut it = text.split_whitespace().map(|v| v.parse::<u16>().ok());
    Some((it.next()??, it.next()??))
}

/// Sockets in a `/proc/net/tcp` table whose local port is in `low..=high` and whose remote
/// port is `server_port` (addresses are `HEXIP:HEXPORT`).
fn count_ports(table: &str, low: u16, high: u16, server_port: u16) -> u64 {
    let port = |addr: &str| {
        addr.rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let mut cols = line.split_whitespace().skip(1);
            let (Some(local), Some(remote)) = (cols.next(), cols.next()) else {
                return false;
            };
            matches!((port(local), port(remote)), (Some(l), Some(r)) if (low..=high).contains(&l) && r == server_port)
        })
        .count() as u64
}

/// Raises this process's soft limit on open files to its hard limit, as load generators
/// do (wrk, k6, vegeta): every stream holds a socket, and the usual soft limit of 1,024
/// would fail a run of 1,024 streams with "Too many open files" before the server is
/// reached. Returns the limit now in force, `None` where it cannot be read.
pub fn raise_open_file_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Some(hard);
    }
    Some(soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snmp_retransmits() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\nTcp: 1 200 120000 -1 5016 2570 7 88 9 1934562 2011442 317 0 1204 0\nUdp: InDatagrams\nUdp: 5\n";
        assert_eq!(parse_snmp_tcp(text), Some((317, 2_011_442)));
        assert_eq!(parse_snmp_tcp("Ip: 1\n"), None);
    }

    #[test]
    fn ports_towards_the_server() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        // Port 8000 is 0x1F40; 0x8000 = 32768 and 0x9C40 = 40000 are ephemeral, 0x1F40 as a
        // local port (the server's side of a loopback connection) is not.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n\
   1: 0100007F:8000 0100007F:1F40 01 00000000:00000000 00:00000000 00000000     0        0 2\n\
   2: 0100007F:9C40 0100007F:1F40 06 00000000:00000000 03:00000F9F 00000000     0        0 0\n\
   3: 0100007F:1F40 0100007F:8000 01 00000000:00000000 00:00000000 00000000     0        0 3\n\
   4: 0100007F:9C41 0100007F:0050 01 00000000:00000000 00:00000000 00000000     0        0 4\n";
        assert_eq!(count_ports(table, 32768, 60999, 8000), 2);
        assert_eq!(count_ports(table, 32768, 60999, 80), 1);
    }
}
