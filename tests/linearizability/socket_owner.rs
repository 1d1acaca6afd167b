//! Which process opened a loopback TCP connection (Linux): the partition proxy
//! must know which node is calling, and every loopback connection comes from
//! 127.0.0.1. The kernel's `sock_diag` netlink interface names the socket of
//! one 4-tuple directly (reading `/proc/net/tcp` instead would walk every
//! socket, thousands of them in TIME_WAIT once clients have run a while);
//! `/proc/<pid>/fd` then tells whose it is. It only asks; it changes nothing.

use std::{
    fs,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
};

use nix::libc;

/// The process among `candidates` holding the client end of the loopback
/// connection from `client_port` to `server_port`: `Ok(Some(pid))`, or
/// `Ok(None)` when it is none of them; `Err` when the socket cannot be found.
pub fn owner_of_connection(
    client_port: u16,
    server_port: u16,
    candidates: &[u32],
) -> Result<Option<u32>, String> {
    let inode = socket_inode(client_port, server_port)?;
    let wanted = format!("socket:[{inode}]");
    Ok(candidates.iter().copied().find(|pid| {
        fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == wanted.as_str()))
        })
    }))
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const HEADER: usize = 16;

/// The inode of the TCP socket 127.0.0.1:`local` → 127.0.0.1:`remote`, asked
/// of the kernel with one exact `sock_diag` lookup.
fn socket_inode(local: u16, remote: u16) -> Result<u32, String> {
    // nlmsghdr, then inet_diag_req_v2 with the exact socket id.
    let mut request = [0u8; HEADER + 56];
    let length = request.len() as u32;
    request[0..4].copy_from_slice(&length.to_ne_bytes());
    request[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    request[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    let body = &mut request[HEADER..];
    body[0] = libc::AF_INET as u8;
    body[1] = libc::IPPROTO_TCP as u8;
    body[4..8].copy_from_slice(&u32::MAX.to_ne_bytes()); // any state
    body[8..10].copy_from_slice(&local.to_be_bytes());
    body[10..12].copy_from_slice(&remote.to_be_bytes());
    body[12..16].copy_from_slice(&[127, 0, 0, 1]);
    body[28..32].copy_from_slice(&[127, 0, 0, 1]);
    body[48..56].copy_from_slice(&[0xFF; 8]); // INET_DIAG_NOCOOKIE

    // SAFETY: `socket` has no memory preconditions; the descriptor it returns
    // is owned by `OwnedFd` from here on.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if raw < 0 {
        return Err(format!(
            "netlink socket: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `raw` is a fresh descriptor nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: the pointer and length describe `request`, alive for the call.
    let sent = unsafe {
        libc::send(
            socket.as_raw_fd(),
            request.as_ptr().cast(),
            request.len(),
            0,
        )
    };
    if sent < 0 {
        return Err(format!(
            "sock_diag send: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut answer = [0u8; 1024];
    // SAFETY: the pointer and length describe `answer`, alive for the call.
    let received = unsafe {
        libc::recv(
            socket.as_raw_fd(),
            answer.as_mut_ptr().cast(),
            answer.len(),
            0,
        )
    };
    let received = usize::try_from(received)
        .map_err(|_| format!("sock_diag recv: {}", std::io::Error::last_os_error()))?;
    let answer = &answer[..received];
    let kind = answer
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or("a short sock_diag answer")?;
    if kind == NLMSG_ERROR {
        return Err(format!(
            "no socket 127.0.0.1:{local} -> 127.0.0.1:{remote} (sock_diag said so)"
        ));
    }
    // inet_diag_msg: family, state, timer, retrans, the id (48 bytes),
    // expires, rqueue, wqueue, uid, then the inode.
    answer
        .get(HEADER + 68..HEADER + 72)
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| "a short sock_diag answer".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_process_owns_the_connection_it_opened() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server_port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("127.0.0.1", server_port)).unwrap();
        let client_port = client.local_addr().unwrap().port();
        let me = std::process::id();
        assert_eq!(
            owner_of_connection(client_port, server_port, &[me]),
            Ok(Some(me))
        );
        // Nor is it anyone else's.
        assert_eq!(
            owner_of_connection(client_port, server_port, &[1]),
            Ok(None)
        );
        // A connection that does not exist is an error, not "nobody's".
        drop(listener);
        assert!(owner_of_connection(client_port, server_port.wrapping_add(1), &[me]).is_err());
    }
}
