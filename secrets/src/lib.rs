//! Secrets at rest, the same way everywhere in this project: [`file`] reads secret files
//! (keys, passphrases, tokens, wallets) only when they are private regular files, and
//! [`envelope`] is the passphrase encryption of the manager key file and the member wallet;
//! [`dir`] creates the services' data directories private (0700), and [`write`] writes new
//! secret files (0600, atomically, never over anything). In transit, [`transport`] is the
//! rule for where a bearer token may go over plain HTTP (loopback only, unless allowed),
//! and through which proxy.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dir;
pub mod envelope;
pub mod file;
pub mod transport;
pub mod write;
