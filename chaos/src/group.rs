//! The group, created the way `scripts/lib.sh`'s `start_stack` does it: `dgsp-registry
//! init` and `public-key`, a passphrase and an admin token in 0600 files.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::processes::Binaries;

/// Writes `contents` to a new file readable by its owner only.
fn write_secret(path: &Path, contents: &str) -> Result<(), String> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(contents.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The group's files in the state directory.
#[derive(Clone, Debug)]
pub struct Group {
    /// The registry's data directory.
    pub data: PathBuf,
    /// The group public key as `dgsp-registry public-key` prints it.
    pub public_key: PathBuf,
    /// The key passphrase file.
    pub passphrase: PathBuf,
    /// The admin token file.
    pub admin_token_file: PathBuf,
    /// The admin token.
    pub admin_token: String,
}

impl Group {
    /// `dgsp-registry init` and `public-key` in `state`, with a random passphrase and
    /// admin token (from the OS, not the run's seed: they are secrets, not decisions).
    pub fn create(bins: &Binaries, state: &Path, params: &str) -> Result<Self, String> {
        let random = |n: usize| {
            let mut b = vec![0u8; n];
            rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut b);
            hex::encode(b)
        };
        let g = Group {
            data: state.join("group"),
            public_key: state.join("group.pub"),
            passphrase: state.join("passphrase"),
            admin_token_file: state.join("admin-token"),
            admin_token: random(24),
        };
        write_secret(&g.passphrase, &random(24))?;
        write_secret(&g.admin_token_file, &g.admin_token)?;
        g.registry_cli(bins, &["init", "--params", params])?;
        let key = g.registry_cli(bins, &["public-key"])?;
        std::fs::write(&g.public_key, key)
            .map_err(|e| format!("{}: {e}", g.public_key.display()))?;
        Ok(g)
    }

    /// The group public key, as pinned by the gateways.
    pub fn key(&self) -> Result<dgsp_core::ManagerPublicKey, String> {
        let bytes = std::fs::read(&self.public_key)
            .map_err(|e| format!("{}: {e}", self.public_key.display()))?;
        dgsp_wire::anchor::parse_key_file(&bytes).map_err(|e| e.to_string())
    }

    /// Runs `dgsp-registry COMMAND ... --data` on the group's data with its passphrase;
    /// its standard output.
    fn registry_cli(&self, bins: &Binaries, command: &[&str]) -> Result<Vec<u8>, String> {
        let out = std::process::Command::new(&bins.registry)
            .args(command)
            .arg("--data")
            .arg(&self.data)
            .env("DGSP_KEY_PASSPHRASE_FILE", &self.passphrase)
            .output()
            .map_err(|e| format!("{}: {e}", bins.registry.display()))?;
        if !out.status.success() {
            return Err(format!(
                "dgsp-registry {} failed: {}",
                command[0],
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(out.stdout)
    }
}
