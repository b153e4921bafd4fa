//! Filesystem errors worded like Node's, as pi's tools pass them to the model:
//! `ENOENT: no such file or directory, open '/abs/path'`.

use std::io;
use std::path::Path;

use nix::errno::Errno;

/// `CODE: description, syscall '<path>'` for an OS error, else the error's own text.
pub(crate) fn describe(err: &io::Error, syscall: &str, path: &Path) -> String {
    match err.raw_os_error() {
        Some(raw) => {
            let errno = Errno::from_raw(raw);
            let mut desc = errno.desc().to_owned();
            if let Some(first) = desc.get(..1) {
                desc.replace_range(..1, &first.to_lowercase());
            }
            format!("{errno:?}: {desc}, {syscall} '{}'", path.display())
        }
        None => format!("{err}, {syscall} '{}'", path.display()),
    }
}

/// The errno name of an OS error (`ENOENT`), or the error kind when it has none.
pub(crate) fn code(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(raw) => format!("{:?}", Errno::from_raw(raw)),
        None => format!("{:?}", err.kind()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_node() {
        let err = io::Error::from_raw_os_error(libc_enoent());
        assert_eq!(
            describe(&err, "open", Path::new("/x/y")),
            "ENOENT: no such file or directory, open '/x/y'"
        );
        assert_eq!(code(&err), "ENOENT");
    }

    fn libc_enoent() -> i32 {
        Errno::ENOENT as i32
    }
}
