//! The STS host the server names in its first MONGODB-AWS message: its validation and the
//! signing region derived from it (auth spec, "Region Calculation").

/// The signing region of `host`, or why the host is refused: empty or longer than 255 bytes,
/// an empty label (`sts..com`, `.amazonaws.com`, `sts.amazonaws.`). `sts.amazonaws.com` and
/// hosts without a dot are `us-east-1`; otherwise the second label.
pub(crate) fn sts_region(host: &str) -> Result<&str, String> {
    if host.is_empty() || host.len() > 255 {
        return Err(format!("the STS host must have 1 to 255 bytes, it has {}", host.len()));
    }
    if host.split('.').any(str::is_empty) {
        return Err(format!("the STS host {host:?} has an empty label"));
    }
    if host == "sts.amazonaws.com" {
        return Ok("us-east-1");
    }
    Ok(host.split('.').nth(1).unwrap_or("us-east-1"))
}

#[cfg(test)]
mod tests {
    use super::sts_region;

    #[test]
    fn the_spec_examples() {
        assert_eq!(sts_region("sts.amazonaws.com"), Ok("us-east-1"));
        assert_eq!(sts_region("sts.us-west-2.amazonaws.com"), Ok("us-west-2"));
        assert_eq!(sts_region("sts.us-west-2.amazonaws.com.ch"), Ok("us-west-2"));
        assert_eq!(sts_region("example.com"), Ok("com"));
        assert_eq!(sts_region("localhost"), Ok("us-east-1"));
        for bad in ["sts..com", ".amazonaws.com", "sts.amazonaws.", ""] {
            assert!(sts_region(bad).is_err(), "{bad:?}");
        }
        assert!(sts_region(&"a".repeat(256)).is_err());
        assert_eq!(sts_region(&"a".repeat(255)), Ok("us-east-1"));
    }
}
