//! The official crate's cargo features this client does not have: enabling one stops the
//! build with the reason, rather than being accepted and ignored. (Its other features name
//! what this client always does, and are no-ops: see `Cargo.toml`.)

/// Stops the build when `$feature` is enabled, with `$why`.
macro_rules! not_here {
    ($($feature:literal => $why:literal,)*) => {
        $(
            #[cfg(feature = $feature)]
            compile_error!(concat!("mongo-actors has no `", $feature, "` feature: ", $why));
        )*
    };
}

not_here! {
    "gssapi-auth" => "GSSAPI (Kerberos) is not implemented",
    "azure-kms" => "client-side field level encryption is not implemented",
    "gcp-kms" => "client-side field level encryption is not implemented",
    "in-use-encryption" => "client-side field level encryption is not implemented",
    "in-use-encryption-unstable" => "client-side field level encryption is not implemented",
    "openssl-tls" => "TLS is rustls (tokio-rustls) only",
    "rustls-tls-aws-lc" => "rustls runs on its ring provider here",
    "socks5-proxy" => "SOCKS5 proxies are not supported (the proxy* URI options are refused)",
}
