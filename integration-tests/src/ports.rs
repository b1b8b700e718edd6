//! Fixed ports a suite needs (the DNS seedlist suite's 27017–27019 and 8000): whether they are
//! free, and if not, which process holds them, so a run that cannot bind says why instead of
//! skipping.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};

/// `Ok` when every port can be bound on 127.0.0.1 now; otherwise the ports that cannot, each
/// with its owner when `/proc` tells it (`27017 (held by pid 42: mongod --port 27017)`).
pub fn check_free(ports: &[u16]) -> Result<(), String> {
    let taken: Vec<String> = ports
        .iter()
        .filter(|p| TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, **p))).is_err())
        .map(|p| format!("{p} ({})", owner(*p).unwrap_or_else(|| "owner unknown".into())))
        .collect();
    if taken.is_empty() {
        Ok(())
    } else {
        Err(format!("port(s) in use on 127.0.0.1: {}", taken.join(", ")))
    }
}

/// `held by pid N: command line` for the process listening on `port`, from `/proc` (Linux);
/// `None` elsewhere or when the socket belongs to another user's process.
pub fn owner(port: u16) -> Option<String> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|table| listening_inodes(&table, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else { continue };
            let link = link.to_string_lossy();
            if inodes.iter().any(|i| link == format!("socket:[{i}]")) {
                let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                return Some(format!("held by pid {pid}: {}", cmd.trim()));
            }
        }
    }
    Some("held by a process this user cannot see".into())
}

/// The socket inodes of a `/proc/net/tcp*` table listening (state `0A`) on `port`.
fn listening_inodes(table: &str, port: u16) -> Vec<String> {
    let want = format!("{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            (local_port == want && *fields.get(3)? == "0A").then(|| fields.get(9).map(|s| s.to_string()))?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_held_here_is_named_with_this_process() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let e = check_free(&[port]).expect_err("the port is held");
        assert!(e.contains(&format!("{port} (held by pid {}", std::process::id())), "{e}");
        drop(l);
        assert_eq!(check_free(&[port]), Ok(()));
    }

    #[test]
    fn the_table_is_read_by_port_and_state() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:6989 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1\n   1: 0100007F:6989 0100007F:9000 01 00000000:00000000 00:00000000 00000000     0        0 999 1\n";
        assert_eq!(listening_inodes(table, 27017), vec!["1234".to_string()]);
        assert!(listening_inodes(table, 27018).is_empty());
    }
}
