//! Object keys as text: %-escaped for corbaloc URLs ([`escape_key`],
//! [`unescape`]), and printable in messages and reports ([`key_text`]).
//! A leaf module: references, reports and errors all name keys this way.

use crate::error::{GiopError, Result};

/// Characters a corbaloc key may hold unescaped (RFC 2396 unreserved and
/// the reserved ones the spec lets through).
pub(crate) fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b";/:?@&=+$,-_.!~*'()".contains(&b)
}

/// %-escape an object key for a corbaloc URL.
pub fn escape_key(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        if unreserved(b) && b != b'/' {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02x}"));
        }
    }
    s
}

/// Undo %-escapes.
pub fn unescape(s: &str, what: &'static str) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    GiopError::reference(what, format!("bad %-escape at character {i}"))
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// An object key, printable: ASCII graphic bytes as they are, every other
/// byte (and `%`) `%`-escaped, so that the text reads back with
/// [`unescape`].
pub fn key_text(k: &[u8]) -> String {
    let mut s = String::with_capacity(k.len());
    for &b in k {
        if b.is_ascii_graphic() && b != b'%' {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02x}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_keys_read_back() {
        let key = b"Bench/\x00%\xffPOA key";
        assert_eq!(escape_key(key), "Bench%2f%00%25%ffPOA%20key");
        assert_eq!(unescape(&escape_key(key), "key").unwrap(), key);
        assert_eq!(key_text(key), "Bench/%00%25%ffPOA%20key");
        assert_eq!(unescape(&key_text(key), "key").unwrap(), key);
    }

    #[test]
    fn a_bad_escape_says_where() {
        let e = unescape("ab%zz", "key").unwrap_err().to_string();
        assert!(e.contains("character 2"), "{e}");
    }
}
