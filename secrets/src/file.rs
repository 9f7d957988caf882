//! Reading secret files (keys, passphrases, tokens, wallets) the way a careful operator
//! expects, in one place for the registry and `dgsp-manager`.
//!
//! A secret file is
//! - opened with `O_NOFOLLOW`: a symbolic link is refused, not followed (whoever can replace
//!   the link could point it elsewhere between a check and the read);
//! - checked on the opened descriptor (`fstat`, never a separate `stat` of the path): it
//!   must be a regular file, and nobody but its owner and the user this process runs as may
//!   read or write it: `mode & 0o077 == 0`. Reading what was checked, from the same
//!   descriptor, leaves no window for a swap;
//! - opened with `O_NONBLOCK` too, so a FIFO put in its place is refused instead of hanging
//!   the process (regular files ignore the flag).
//!
//! One refinement of the mode rule: when the group bits are set only because the file
//! carries a POSIX ACL whose entries grant nothing to any group and nothing to any user but
//! the owner and the user this process runs as, the file is as private as a 0600 one and is
//! accepted. That is how systemd (254 and later) hands a service its `LoadCredential=` files:
//! root-owned, mode 0440, with an ACL entry for the service's user alone.
//!
//! Every refusal names the path, what was found and the fix (`chmod 600 PATH`).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

/// Why a secret file was refused or could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    /// The file could not be opened or read (missing, unreadable, ...).
    #[error("{path}: {source}")]
    Io {
        /// the file
        path: PathBuf,
        /// the cause
        #[source]
        source: io::Error,
    },
    /// The path is a symbolic link.
    #[error("{path}: refusing a secret file that is a symbolic link (it is not followed); name the file itself, or copy it in place: cp --remove-destination \"$(readlink -f {path})\" {path} && chmod 600 {path}")]
    Symlink {
        /// the file
        path: PathBuf,
    },
    /// Not a regular file (a directory, FIFO, socket or device).
    #[error("{path}: refusing a secret file that is not a regular file (it is a {kind})")]
    NotRegular {
        /// the file
        path: PathBuf,
        /// what it is
        kind: &'static str,
    },
    /// Users other than the owner may read or write it.
    #[error("{path}: refusing a secret file that other users can access (mode {mode:04o}{acl}); run: chmod 600 {path}", acl = if *.acl { ", with an ACL granting access" } else { "" })]
    TooOpen {
        /// the file
        path: PathBuf,
        /// its permission bits
        mode: u32,
        /// whether a POSIX ACL grants the access
        acl: bool,
    },
    /// The contents are not UTF-8 text (for passphrases and tokens).
    #[error("{path}: the secret is not UTF-8 text")]
    NotUtf8 {
        /// the file
        path: PathBuf,
    },
    /// The file holds nothing but whitespace (for tokens).
    #[error("{path}: the file is empty")]
    Empty {
        /// the file
        path: PathBuf,
    },
}

impl SecretFileError {
    /// A short stable name for scripts: `too_open`, `symlink`, `not_regular_file`,
    /// `not_utf8`, `empty` or `io`.
    pub fn kind(&self) -> &'static str {
        match self {
            SecretFileError::Io { .. } => "io",
            SecretFileError::Symlink { .. } => "symlink",
            SecretFileError::NotRegular { .. } => "not_regular_file",
            SecretFileError::TooOpen { .. } => "too_open",
            SecretFileError::NotUtf8 { .. } => "not_utf8",
            SecretFileError::Empty { .. } => "empty",
        }
    }

    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, SecretFileError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// Whether the file exists but was refused for where it is or who may access it (a
    /// symbolic link, not a regular file, too open), as opposed to an I/O failure.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            SecretFileError::Symlink { .. }
                | SecretFileError::NotRegular { .. }
                | SecretFileError::TooOpen { .. }
        )
    }
}

/// Opens `path` for reading as a secret file (see the module docs for the checks).
pub fn open(path: &Path) -> Result<File, SecretFileError> {
    open_with(OpenOptions::new().read(true), path)
}

/// Opens `path` with `options` (e.g. for appending to a private file) and the same checks
/// as [`open`]. `options` must not create the file; `O_NOFOLLOW` and `O_NONBLOCK` are added.
pub fn open_with(options: &mut OpenOptions, path: &Path) -> Result<File, SecretFileError> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|source| {
            // O_NOFOLLOW on a link in the last component fails with ELOOP.
            let is_link = source.raw_os_error() == Some(libc::ELOOP)
                && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if is_link {
                SecretFileError::Symlink {
                    path: path.to_owned(),
                }
            } else {
                SecretFileError::Io {
                    path: path.to_owned(),
                    source,
                }
            }
        })?;
    check(&file, path)?;
    Ok(file)
}

/// Checks an opened file (its descriptor, not its path): a regular file that nobody but
/// its owner and this process's user may access.
pub fn check(file: &File, path: &Path) -> Result<(), SecretFileError> {
    let meta = file.metadata().map_err(|source| SecretFileError::Io {
        path: path.to_owned(),
        source,
    })?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "directory"
        } else if ft.is_fifo() {
            "FIFO"
        } else if ft.is_socket() {
            "socket"
        } else if ft.is_char_device() || ft.is_block_device() {
            "device"
        } else {
            "special file"
        };
        return Err(SecretFileError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    let mode = meta.mode() & 0o7777;
    let too_open = |acl| SecretFileError::TooOpen {
        path: path.to_owned(),
        mode,
        acl,
    };
    if mode & 0o077 == 0 {
        return Ok(());
    }
    // Only the group bits may be explained away, by an ACL (they are then its mask).
    if mode & 0o007 != 0 {
        return Err(too_open(false));
    }
    match acl::private_to_owner_and(file, rustix::process::geteuid().as_raw()) {
        acl::Verdict::Private => Ok(()),
        acl::Verdict::Grants => Err(too_open(true)),
        acl::Verdict::NoAcl => Err(too_open(false)),
    }
}

/// Reads a whole secret file (checked as by [`open`]) into a buffer zeroized on drop.
pub fn read(path: &Path) -> Result<Zeroizing<Vec<u8>>, SecretFileError> {
    let mut file = open(path)?;
    let io = |source| SecretFileError::Io {
        path: path.to_owned(),
        source,
    };
    // Sized up front so the buffer is not reallocated (a reallocation would leave an
    // unzeroized copy of part of the secret behind).
    let len = file.metadata().map_err(io)?.len();
    let mut buf = Zeroizing::new(Vec::with_capacity(
        usize::try_from(len).unwrap_or(0).saturating_add(1),
    ));
    file.read_to_end(&mut buf).map_err(io)?;
    Ok(buf)
}

/// Reads a secret file as UTF-8 text: [`read`], then the text check.
pub fn read_text(path: &Path) -> Result<Zeroizing<String>, SecretFileError> {
    let bytes = read(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| SecretFileError::NotUtf8 {
        path: path.to_owned(),
    })?;
    Ok(Zeroizing::new(text.to_owned()))
}

/// Reads a bearer token from a secret file: the whole text with surrounding whitespace
/// (a trailing newline) removed; an empty one is refused.
pub fn read_token(path: &Path) -> Result<Zeroizing<String>, SecretFileError> {
    let text = read_text(path)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(SecretFileError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(Zeroizing::new(token.to_owned()))
}

/// The POSIX access ACL of an opened file (`system.posix_acl_access`, Linux's xattr form).
mod acl {
    use std::fs::File;

    const NAME: &str = "system.posix_acl_access";
    const VERSION: u32 = 2;
    const USER_OBJ: u16 = 0x01;
    const USER: u16 = 0x02;
    const GROUP_OBJ: u16 = 0x04;
    const GROUP: u16 = 0x08;
    const MASK: u16 = 0x10;
    const OTHER: u16 = 0x20;
    /// read, write, execute
    const RWX: u16 = 0o7;

    /// What the ACL says about who else may access the file.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) enum Verdict {
        /// Only the owner and the given user.
        Private,
        /// Some group, or another user, has access (or the ACL cannot be read as one).
        Grants,
        /// The file has no ACL (or the file system has none).
        NoAcl,
    }

    /// Whether the file's ACL limits access to its owner and user `me`.
    pub(super) fn private_to_owner_and(file: &File, me: u32) -> Verdict {
        let mut buf = [0u8; 4 + 8 * 64];
        match rustix::fs::fgetxattr(file, NAME, &mut buf[..]) {
            Ok(len) => judge(&buf[..len], me),
            Err(e) if e == rustix::io::Errno::RANGE => Verdict::Grants, // over 64 entries
            Err(_) => Verdict::NoAcl,
        }
    }

    /// Judges an ACL in its xattr form: a little-endian u32 version, then entries of
    /// (u16 tag, u16 permissions, u32 id).
    pub(super) fn judge(bytes: &[u8], me: u32) -> Verdict {
        let Some((version, entries)) = bytes.split_first_chunk::<4>() else {
            return Verdict::Grants;
        };
        if u32::from_le_bytes(*version) != VERSION || entries.len() % 8 != 0 {
            return Verdict::Grants;
        }
        let entries: Vec<(u16, u16, u32)> = entries
            .chunks_exact(8)
            .map(|e| {
                (
                    u16::from_le_bytes([e[0], e[1]]),
                    u16::from_le_bytes([e[2], e[3]]),
                    u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
                )
            })
            .collect();
        // Without a mask entry the group-class entries are not limited.
        let mask = entries
            .iter()
            .find(|e| e.0 == MASK)
            .map_or(RWX, |e| e.1 & RWX);
        for &(tag, perm, id) in &entries {
            let granted = perm & RWX;
            let open = match tag {
                USER_OBJ => false,
                USER => granted & mask != 0 && id != me,
                GROUP_OBJ | GROUP => granted & mask != 0,
                MASK => false,
                OTHER => granted != 0,
                _ => true, // an entry we do not know: assume it grants
            };
            if open {
                return Verdict::Grants;
            }
        }
        Verdict::Private
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const ANY: u32 = u32::MAX;

        fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
            let mut out = VERSION.to_le_bytes().to_vec();
            for &(tag, perm, id) in entries {
                out.extend_from_slice(&tag.to_le_bytes());
                out.extend_from_slice(&perm.to_le_bytes());
                out.extend_from_slice(&id.to_le_bytes());
            }
            out
        }

        #[test]
        fn a_systemd_credential_acl_is_private_to_its_user() {
            // root-owned, mode 0440: user::r, user:10001:r, group::-, mask::r, other::-
            let cred = acl(&[
                (USER_OBJ, 4, ANY),
                (USER, 4, 10001),
                (GROUP_OBJ, 0, ANY),
                (MASK, 4, ANY),
                (OTHER, 0, ANY),
            ]);
            assert_eq!(judge(&cred, 10001), Verdict::Private);
            // The same file read by another user: it is not private to that one.
            assert_eq!(judge(&cred, 10002), Verdict::Grants);
        }

        #[test]
        fn any_group_or_other_access_is_refused() {
            let base = [(USER_OBJ, 6, ANY), (MASK, 4, ANY), (OTHER, 0, ANY)];
            for extra in [(GROUP_OBJ, 4, ANY), (GROUP, 4, 100), (GROUP, 6, 100)] {
                let mut e = base.to_vec();
                e.push(extra);
                assert_eq!(judge(&acl(&e), 1), Verdict::Grants, "{extra:?}");
            }
            let e = [(USER_OBJ, 6, ANY), (GROUP_OBJ, 0, ANY), (OTHER, 4, ANY)];
            assert_eq!(judge(&acl(&e), 1), Verdict::Grants);
            // A named group masked to nothing grants nothing.
            let e = [
                (USER_OBJ, 6, ANY),
                (GROUP, 4, 100),
                (GROUP_OBJ, 0, ANY),
                (MASK, 0, ANY),
                (OTHER, 0, ANY),
            ];
            assert_eq!(judge(&acl(&e), 1), Verdict::Private);
        }

        #[test]
        fn malformed_acls_count_as_granting() {
            assert_eq!(judge(&[], 1), Verdict::Grants);
            assert_eq!(judge(&[2, 0, 0], 1), Verdict::Grants);
            let mut bad_version = acl(&[(USER_OBJ, 6, ANY)]);
            bad_version[0] = 1;
            assert_eq!(judge(&bad_version, 1), Verdict::Grants);
            let mut torn = acl(&[(USER_OBJ, 6, ANY)]);
            torn.push(0);
            assert_eq!(judge(&torn, 1), Verdict::Grants);
            assert_eq!(judge(&acl(&[(0x40, 4, ANY)]), 1), Verdict::Grants);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file(dir: &Path, name: &str, mode: u32, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn private_regular_files_are_read_and_others_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ok = file(dir.path(), "ok", 0o600, "  s3cret-token-value \n");
        assert_eq!(&*read_token(&ok).unwrap(), "s3cret-token-value");
        assert_eq!(&*read_text(&ok).unwrap(), "  s3cret-token-value \n");
        let ro = file(dir.path(), "ro", 0o400, "x");
        assert_eq!(&*read(&ro).unwrap(), b"x");

        for mode in [0o640, 0o644, 0o604, 0o660, 0o610, 0o601] {
            let f = file(dir.path(), &format!("m{mode:o}"), mode, "x");
            let err = read(&f).unwrap_err();
            assert!(
                matches!(err, SecretFileError::TooOpen { mode: m, acl: false, .. } if m == mode),
                "{mode:o}: {err:?}"
            );
            let text = err.to_string();
            assert!(
                text.contains(&format!("chmod 600 {}", f.display())),
                "{text}"
            );
            assert!(text.contains(&format!("{mode:04o}")), "{text}");
        }

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        let err = read(&link).unwrap_err();
        assert!(matches!(err, SecretFileError::Symlink { .. }), "{err:?}");
        assert_eq!(err.kind(), "symlink");

        let err = read(dir.path()).unwrap_err();
        assert!(
            matches!(
                err,
                SecretFileError::NotRegular {
                    kind: "directory",
                    ..
                }
            ),
            "{err:?}"
        );
        let err = read(&dir.path().join("missing")).unwrap_err();
        assert!(err.is_not_found(), "{err:?}");

        let empty = file(dir.path(), "empty", 0o600, " \n");
        assert!(matches!(
            read_token(&empty),
            Err(SecretFileError::Empty { .. })
        ));
        let binary = dir.path().join("binary");
        std::fs::write(&binary, [0xff, 0xfe]).unwrap();
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            read_token(&binary),
            Err(SecretFileError::NotUtf8 { .. })
        ));
    }

    /// Sets an ACL on `path` (xattr form); false when the file system has no ACLs.
    fn set_acl(path: &Path, entries: &[(u16, u16, u32)]) -> bool {
        let mut blob = 2u32.to_le_bytes().to_vec();
        for &(tag, perm, id) in entries {
            blob.extend_from_slice(&tag.to_le_bytes());
            blob.extend_from_slice(&perm.to_le_bytes());
            blob.extend_from_slice(&id.to_le_bytes());
        }
        rustix::fs::setxattr(
            path,
            "system.posix_acl_access",
            &blob,
            rustix::fs::XattrFlags::empty(),
        )
        .is_ok()
    }

    /// A file as systemd's `LoadCredential=` makes it (mode 0440 because of an ACL naming
    /// only this process's user) is accepted; the same ACL naming another user, or a named
    /// group, is refused as too open.
    #[test]
    fn an_acl_private_to_this_user_is_accepted_and_others_refused() {
        let dir = tempfile::tempdir().unwrap();
        let me = rustix::process::geteuid().as_raw();
        let any = u32::MAX;
        let cred = file(dir.path(), "cred", 0o400, "token-from-systemd\n");
        if !set_acl(
            &cred,
            &[
                (1, 4, any),
                (2, 4, me),
                (4, 0, any),
                (0x10, 4, any),
                (0x20, 0, any),
            ],
        ) {
            eprintln!("no POSIX ACLs on this file system: skipped");
            return;
        }
        let mode = std::fs::metadata(&cred).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o440, "the ACL mask shows as the group bits");
        assert_eq!(&*read_token(&cred).unwrap(), "token-from-systemd");

        let other = file(dir.path(), "other", 0o400, "x");
        assert!(set_acl(
            &other,
            &[
                (1, 4, any),
                (2, 4, me.wrapping_add(1)),
                (4, 0, any),
                (0x10, 4, any),
                (0x20, 0, any)
            ],
        ));
        let err = read(&other).unwrap_err();
        assert!(
            matches!(
                err,
                SecretFileError::TooOpen {
                    mode: 0o440,
                    acl: true,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("with an ACL"), "{err}");

        let group = file(dir.path(), "group", 0o400, "x");
        assert!(set_acl(
            &group,
            &[
                (1, 4, any),
                (4, 0, any),
                (8, 4, 4242),
                (0x10, 4, any),
                (0x20, 0, any)
            ],
        ));
        assert!(matches!(
            read(&group),
            Err(SecretFileError::TooOpen { acl: true, .. })
        ));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            eprintln!("mkfifo unavailable: skipped");
            return;
        }
        std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            read(&fifo),
            Err(SecretFileError::NotRegular { kind: "FIFO", .. })
        ));
    }
}
