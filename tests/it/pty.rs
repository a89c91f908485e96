//! Running dacli on a pseudo-terminal, as a person runs it: the suites of the human surface
//! (`human_tty*`, `human_editor*`, `human_progress`) share this one setup.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};

/// Runs `cmd` with standard output and error (and standard input, when `stdin`) on a
/// pseudo-terminal `cols` columns wide (the pty's default size without one): (exit code, the
/// terminal's text with `\r\n` read as `\n`).
pub fn run(cmd: Command, cols: Option<u16>, stdin: bool) -> (Option<i32>, String) {
    run_typing(cmd, cols, stdin, b"")
}

/// [`run`], with `typed` typed on the terminal as the command starts (standard input must be
/// on it to read it).
pub fn run_typing(
    mut cmd: Command,
    cols: Option<u16>,
    stdin: bool,
    typed: &[u8],
) -> (Option<i32>, String) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    if let Some(cols) = cols {
        rustix::termios::tcsetwinsize(
            &master,
            rustix::termios::Winsize {
                ws_row: 50,
                ws_col: cols,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .unwrap();
    }
    if stdin {
        cmd.stdin(Stdio::from(OwnedFd::from(slave.try_clone().unwrap())));
    } else {
        cmd.stdin(Stdio::null());
    }
    cmd.stdout(Stdio::from(OwnedFd::from(slave.try_clone().unwrap())))
        .stderr(Stdio::from(OwnedFd::from(slave)));
    let mut child = cmd.spawn().unwrap();
    // The child holds the only slave ends now: reading ends (EIO) when it exits.
    drop(cmd);
    let mut file = std::fs::File::from(master);
    if !typed.is_empty() {
        std::io::Write::write_all(&mut file, typed).unwrap();
    }
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let code = child.wait().unwrap().code();
    let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
    (code, text)
}
