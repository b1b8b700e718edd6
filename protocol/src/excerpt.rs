//! Text from outside the process (a metadata service's error body, a server's error message)
//! as a bounded excerpt: one rule for how much of it becomes an error message, a server
//! description's `error`, a log line or a status page's field.

/// How many bytes of an outside text an error message keeps.
pub const EXCERPT_BYTES: usize = 256;

/// `text` cut to at most `max` bytes at a character boundary, followed by how much was left
/// out; unchanged when it fits.
///
/// ```
/// use protocol::excerpt::excerpt;
/// assert_eq!(excerpt("short", 256), "short");
/// let long = "é".repeat(300);
/// let cut = excerpt(&long, 256);
/// assert!(cut.starts_with(&"é".repeat(128)));
/// assert!(cut.ends_with("… (344 more bytes)"));
/// ```
pub fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}

/// [`excerpt`] of [`EXCERPT_BYTES`].
pub fn short(text: &str) -> String {
    excerpt(text, EXCERPT_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mebibyte_becomes_a_few_hundred_bytes() {
        let body = "x".repeat(1 << 20);
        let cut = short(&body);
        assert!(cut.len() < EXCERPT_BYTES + 40, "{}", cut.len());
        assert!(cut.ends_with(&format!("({} more bytes)", (1 << 20) - EXCERPT_BYTES)));
        assert_eq!(excerpt("abc", 3), "abc");
        assert_eq!(excerpt("abcd", 3), "abc… (1 more bytes)");
    }
}
