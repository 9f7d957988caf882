//! Where the wallet passphrase comes from: `--passphrase-file` (first line; a private
//! regular file, not a symbolic link: [`secret_file`]), else `$DGSP_WALLET_PASSPHRASE`, else
//! a prompt on the terminal. Held in zeroizing buffers.

use std::path::Path;

use dgsp_secrets::envelope::MIN_PASSPHRASE_LEN;
use dgsp_secrets::file as secret_file;
use zeroize::Zeroizing;

use super::WalletError;
use crate::error::Error;

/// The environment variable holding the passphrase (for scripts).
pub const ENV: &str = "DGSP_WALLET_PASSPHRASE";

/// Reads the passphrase. `new` (keygen) asks twice at a prompt and enforces the minimum
/// length.
pub fn read(file: Option<&Path>, new: bool) -> Result<Zeroizing<String>, Error> {
    let pass = if let Some(path) = file {
        let text = secret_file::read_text(path)?;
        let line = text.lines().next().unwrap_or("");
        Zeroizing::new(line.to_owned())
    } else if let Some(value) = std::env::var_os(ENV) {
        Zeroizing::new(
            value
                .into_string()
                .map_err(|_| WalletError::NoPassphrase(format!("${ENV} is not valid UTF-8")))?,
        )
    } else {
        prompt(new)?
    };
    if new && pass.chars().count() < MIN_PASSPHRASE_LEN {
        return Err(WalletError::WeakPassphrase.into());
    }
    Ok(pass)
}

fn prompt(new: bool) -> Result<Zeroizing<String>, Error> {
    let ask = |text: &str| {
        rpassword::prompt_password(text)
            .map(Zeroizing::new)
            .map_err(|e| {
                WalletError::NoPassphrase(format!(
                    "cannot prompt for it ({e}); use --passphrase-file or ${ENV}"
                ))
            })
    };
    if !new {
        return Ok(ask("Wallet passphrase: ")?);
    }
    let first = ask(&format!(
        "New wallet passphrase (at least {MIN_PASSPHRASE_LEN} characters): "
    ))?;
    if first.chars().count() < MIN_PASSPHRASE_LEN {
        return Err(WalletError::WeakPassphrase.into());
    }
    let again = ask("Repeat it: ")?;
    if *first != *again {
        return Err(WalletError::PassphraseMismatch.into());
    }
    Ok(first)
}
