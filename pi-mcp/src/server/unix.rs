//! A Unix socket only this user can open, for streamable HTTP without a network port: the MCP
//! spec's recommended local alternative to a token.
//!
//! The socket is bound inside a fresh folder of mode 0700, made 0600 there, then linked to its
//! path, so at no moment can another user connect to it (a `umask` would do the same for the
//! whole process, other threads' files included). A stale socket file (nobody listening) is
//! replaced; a live one, or anything that is not a socket, is left alone with an error. The
//! file is removed when serving ends, if it is still ours.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ServeError;

/// The socket's file, removed on drop if it is still the one we made.
pub(crate) struct SocketFile {
    path: PathBuf,
    device: u64,
    inode: u64,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && meta.dev() == self.device
            && meta.ino() == self.inode
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Binds a listening socket at `path` with mode 0600.
pub(crate) fn bind_private(
    path: &Path,
) -> Result<(tokio::net::UnixListener, SocketFile), ServeError> {
    let problem = |reason: String| ServeError::UnixSocket {
        path: path.to_owned(),
        reason,
    };
    clear_stale(path).map_err(problem)?;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let private = tempfile::Builder::new()
        .prefix(".pi-mcp-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(folder)
        .map_err(|err| problem(format!("cannot make a private folder next to it: {err}")))?;
    let staged = private.path().join("s");
    let listener = std::os::unix::net::UnixListener::bind(&staged)
        .map_err(|err| problem(format!("cannot bind it: {err}")))?;
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
        .map_err(|err| problem(format!("cannot make it private (mode 0600): {err}")))?;
    // A hard link never replaces a file that appeared meanwhile; rename is the fallback for
    // file systems without links (nothing was at the path a moment ago).
    match std::fs::hard_link(&staged, path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            return Err(problem(
                "another file appeared at this path meanwhile".to_owned(),
            ));
        }
        Err(_) => std::fs::rename(&staged, path)
            .map_err(|err| problem(format!("cannot move it into place: {err}")))?,
    }
    drop(private);
    let meta = std::fs::symlink_metadata(path).map_err(|err| problem(err.to_string()))?;
    let file = SocketFile {
        path: path.to_owned(),
        device: meta.dev(),
        inode: meta.ino(),
    };
    listener
        .set_nonblocking(true)
        .map_err(|err| problem(err.to_string()))?;
    let listener = tokio::net::UnixListener::from_std(listener).map_err(ServeError::Io)?;
    Ok((listener, file))
}

/// Removes a socket file nobody listens on; refuses a live socket and anything else.
fn clear_stale(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err.to_string()),
    };
    if !meta.file_type().is_socket() {
        return Err("a file that is not a socket is there; it is left alone".to_owned());
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err("another server is listening on it".to_owned()),
        Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => std::fs::remove_file(path)
            .map_err(|err| format!("cannot remove the stale socket file: {err}")),
        Err(err) => Err(format!("a socket is there that cannot be checked: {err}")),
    }
}
