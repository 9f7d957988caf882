//! A bounds-checked reader for the module's fixed binary layouts (big-endian integers).
//! Every read checks the remaining length first and reports a [`FormatError`].

use super::error::FormatError;

/// Reads fields front to back from a byte string.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader over `bytes`, naming `what` in errors.
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader {
            bytes,
            offset: 0,
            what,
        }
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let rest = &self.bytes[self.offset..];
        if rest.len() < n {
            return Err(FormatError::Truncated {
                what: self.what,
                offset: self.offset,
                needed: n,
                available: rest.len(),
            });
        }
        self.offset += n;
        Ok(&rest[..n])
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// One byte.
    pub(crate) fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.array::<1>()?[0])
    }

    /// A big-endian `u16`.
    pub(crate) fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    /// A big-endian `u32`.
    pub(crate) fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// A big-endian `u64`.
    pub(crate) fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Checks a 4-byte magic and a version byte.
    pub(crate) fn header(
        &mut self,
        magic: &'static [u8; 4],
        version: u8,
    ) -> Result<(), FormatError> {
        let found: [u8; 4] = self.array()?;
        if &found != magic {
            return Err(FormatError::BadMagic {
                what: self.what,
                expected: core::str::from_utf8(magic).unwrap_or("?"),
                found,
            });
        }
        let v = self.u8()?;
        if v != version {
            return Err(FormatError::UnsupportedVersion {
                what: self.what,
                version: v,
            });
        }
        Ok(())
    }

    /// Fails if any byte is left.
    pub(crate) fn finish(self) -> Result<(), FormatError> {
        let extra = self.bytes.len() - self.offset;
        if extra != 0 {
            return Err(FormatError::TrailingBytes {
                what: self.what,
                extra,
            });
        }
        Ok(())
    }
}
