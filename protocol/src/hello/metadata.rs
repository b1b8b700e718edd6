//! Client metadata for the handshake (`client` field), including FaaS and container detection.
//!
//! FaaS detection also decides the default server monitoring mode: `serverMonitoringMode=auto`
//! polls instead of streaming on a FaaS platform.

use bson::{doc, Document};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Name this crate reports as `client.driver.name`.
pub const DRIVER_NAME: &str = "mongo-actors";
/// Version this crate reports as `client.driver.version`.
pub const DRIVER_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Longest `client.application.name` the server accepts, in bytes.
pub const MAX_APP_NAME_BYTES: usize = 128;
/// Largest `client` document the server accepts, in bytes of BSON.
pub const MAX_METADATA_BYTES: usize = 512;

/// A Function-as-a-Service platform, detected from environment variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaasPlatform {
    /// AWS Lambda (`aws.lambda`).
    #[serde(rename = "aws.lambda")]
    AwsLambda,
    /// Azure Functions (`azure.func`).
    #[serde(rename = "azure.func")]
    AzureFunc,
    /// Google Cloud Functions (`gcp.func`).
    #[serde(rename = "gcp.func")]
    GcpFunc,
    /// Vercel (`vercel`).
    #[serde(rename = "vercel")]
    Vercel,
}

impl FaasPlatform {
    /// The `client.env.name` value.
    pub fn name(self) -> &'static str {
        match self {
            FaasPlatform::AwsLambda => "aws.lambda",
            FaasPlatform::AzureFunc => "azure.func",
            FaasPlatform::GcpFunc => "gcp.func",
            FaasPlatform::Vercel => "vercel",
        }
    }

    /// Detects the platform from an environment lookup. `None` when no platform, or an
    /// ambiguous combination, is present (vercel wins over aws.lambda; any other mix is ambiguous).
    ///
    /// ```
    /// use protocol::hello::metadata::FaasPlatform;
    /// let env = |k: &str| (k == "AWS_LAMBDA_RUNTIME_API").then(|| "x".to_string());
    /// assert_eq!(FaasPlatform::detect(env), Some(FaasPlatform::AwsLambda));
    /// ```
    pub fn detect(env: impl Fn(&str) -> Option<String>) -> Option<FaasPlatform> {
        let set = |k: &str| env(k).is_some_and(|v| !v.is_empty());
        let aws = env("AWS_EXECUTION_ENV").is_some_and(|v| v.starts_with("AWS_Lambda_"))
            || set("AWS_LAMBDA_RUNTIME_API");
        let azure = set("FUNCTIONS_WORKER_RUNTIME");
        let gcp = set("K_SERVICE") || set("FUNCTION_NAME");
        let vercel = set("VERCEL");
        match (aws, azure, gcp, vercel) {
            (_, false, false, true) => Some(FaasPlatform::Vercel),
            (true, false, false, false) => Some(FaasPlatform::AwsLambda),
            (false, true, false, false) => Some(FaasPlatform::AzureFunc),
            (false, false, true, false) => Some(FaasPlatform::GcpFunc),
            _ => None,
        }
    }
}

/// Detects FaaS from the process environment.
pub fn is_faas() -> bool {
    FaasPlatform::detect(|k| std::env::var(k).ok()).is_some()
}

/// `client.env`: the execution environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvMetadata {
    /// The FaaS platform, if any.
    pub name: Option<FaasPlatform>,
    /// `timeout_sec` (gcp.func).
    pub timeout_sec: Option<i32>,
    /// `memory_mb` (aws.lambda, gcp.func).
    pub memory_mb: Option<i32>,
    /// `region`.
    pub region: Option<String>,
    /// `container.runtime`: "docker" when `/.dockerenv` exists.
    pub container_runtime: Option<String>,
    /// `container.orchestrator`: "kubernetes" when `KUBERNETES_SERVICE_HOST` is set.
    pub container_orchestrator: Option<String>,
}

impl EnvMetadata {
    /// Builds `client.env` from an environment lookup and whether `/.dockerenv` exists.
    pub fn detect(env: impl Fn(&str) -> Option<String>, dockerenv: bool) -> Self {
        let name = FaasPlatform::detect(&env);
        let int = |k: &str| env(k).and_then(|v| v.trim().parse::<i32>().ok());
        let string = |k: &str| env(k).filter(|v| !v.is_empty());
        let (timeout_sec, memory_mb, region) = match name {
            Some(FaasPlatform::AwsLambda) => {
                (None, int("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), string("AWS_REGION"))
            }
            Some(FaasPlatform::GcpFunc) => {
                (int("FUNCTION_TIMEOUT_SEC"), int("FUNCTION_MEMORY_MB"), string("FUNCTION_REGION"))
            }
            Some(FaasPlatform::Vercel) => (None, None, string("VERCEL_REGION")),
            Some(FaasPlatform::AzureFunc) | None => (None, None, None),
        };
        EnvMetadata {
            name,
            timeout_sec,
            memory_mb,
            region,
            container_runtime: dockerenv.then(|| "docker".to_string()),
            container_orchestrator: string("KUBERNETES_SERVICE_HOST").map(|_| "kubernetes".to_string()),
        }
    }

    fn is_empty(&self) -> bool {
        *self == EnvMetadata::default()
    }

    fn to_document(&self) -> Document {
        let mut d = Document::new();
        if let Some(n) = self.name {
            d.insert("name", n.name());
        }
        if let Some(t) = self.timeout_sec {
            d.insert("timeout_sec", t);
        }
        if let Some(m) = self.memory_mb {
            d.insert("memory_mb", m);
        }
        if let Some(r) = &self.region {
            d.insert("region", r.as_str());
        }
        let mut c = Document::new();
        if let Some(r) = &self.container_runtime {
            c.insert("runtime", r.as_str());
        }
        if let Some(o) = &self.container_orchestrator {
            c.insert("orchestrator", o.as_str());
        }
        if !c.is_empty() {
            d.insert("container", c);
        }
        d
    }
}

/// Information a library wrapping mongo-actors appends to the driver metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, typed_builder::TypedBuilder)]
pub struct DriverInfo {
    /// The wrapping library's name.
    #[builder(setter(into))]
    pub name: String,
    /// Its version.
    #[builder(default, setter(into))]
    pub version: Option<String>,
    /// Its platform details.
    #[builder(default, setter(into))]
    pub platform: Option<String>,
}

/// The `client` document sent in the handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientMetadata {
    /// `application.name`, from the `appname` option.
    pub application_name: Option<String>,
    /// `driver.name`.
    pub driver_name: String,
    /// `driver.version`.
    pub driver_version: String,
    /// `os.type` (like `uname -s`).
    pub os_type: String,
    /// `os.name`.
    pub os_name: Option<String>,
    /// `os.architecture` (like `uname -m`).
    pub os_architecture: Option<String>,
    /// `platform`.
    pub platform: Option<String>,
    /// `env`.
    pub env: EnvMetadata,
    appended: Vec<DriverInfo>,
}

impl ClientMetadata {
    /// Metadata for this process, detected from the real environment.
    ///
    /// Fails when `app_name` is longer than 128 bytes.
    pub fn new(app_name: Option<String>) -> Result<Self> {
        Self::with_env(app_name, |k| std::env::var(k).ok(), std::path::Path::new("/.dockerenv").exists())
    }

    /// Metadata built from an injected environment lookup, for tests and embedding.
    pub fn with_env(
        app_name: Option<String>,
        env: impl Fn(&str) -> Option<String>,
        dockerenv: bool,
    ) -> Result<Self> {
        if let Some(name) = &app_name {
            if name.len() > MAX_APP_NAME_BYTES {
                return Err(Error::InvalidOption {
                    name: "appname".into(),
                    message: format!("must be at most {MAX_APP_NAME_BYTES} bytes, got {}", name.len()),
                });
            }
        }
        let os_type = match std::env::consts::OS {
            "linux" => "Linux",
            "macos" => "Darwin",
            "windows" => "Windows",
            "freebsd" | "openbsd" | "netbsd" => "BSD",
            "" => "unknown",
            _ => "Unix",
        };
        Ok(ClientMetadata {
            application_name: app_name,
            driver_name: DRIVER_NAME.to_string(),
            driver_version: DRIVER_VERSION.to_string(),
            os_type: os_type.to_string(),
            os_name: Some(std::env::consts::OS.to_string()),
            os_architecture: Some(std::env::consts::ARCH.to_string()),
            // The language; a caller adds its runtime (`ConnectionOptionsBuilder::platform`).
            platform: Some(format!("Rust ({})", std::env::consts::FAMILY)),
            env: EnvMetadata::detect(env, dockerenv),
            appended: Vec::new(),
        })
    }

    /// Whether a FaaS platform was detected: `serverMonitoringMode=auto` then polls.
    pub fn is_faas(&self) -> bool {
        self.env.name.is_some()
    }

    /// Appends a wrapping library's info, `|`-delimited. A duplicate is ignored; a value holding
    /// `|` is an error.
    pub fn append(&mut self, info: DriverInfo) -> Result<()> {
        let norm = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        let info =
            DriverInfo { name: info.name, version: norm(&info.version), platform: norm(&info.platform) };
        let fields = [Some(&info.name), info.version.as_ref(), info.platform.as_ref()];
        if fields.iter().flatten().any(|s| s.contains('|')) {
            return Err(Error::InvalidOption {
                name: "driverInfo".into(),
                message: "must not contain '|'".into(),
            });
        }
        if self.appended.contains(&info) {
            return Ok(());
        }
        self.driver_name = format!("{}|{}", self.driver_name, info.name);
        if let Some(v) = &info.version {
            self.driver_version = format!("{}|{v}", self.driver_version);
        }
        if let Some(p) = &info.platform {
            self.platform = Some(match &self.platform {
                Some(own) => format!("{own}|{p}"),
                None => p.clone(),
            });
        }
        self.appended.push(info);
        Ok(())
    }

    /// The BSON `client` document, shrunk to at most 512 bytes in the spec's order: env fields
    /// but the name, os fields but the type, the whole env, then the platform string.
    pub fn to_document(&self) -> Document {
        let mut m = self.clone();
        let mut d = m.render();
        if encoded_len(&d) <= MAX_METADATA_BYTES {
            return d;
        }
        m.env = EnvMetadata { name: m.env.name, ..Default::default() };
        d = m.render();
        if encoded_len(&d) <= MAX_METADATA_BYTES {
            return d;
        }
        m.os_name = None;
        m.os_architecture = None;
        d = m.render();
        if encoded_len(&d) <= MAX_METADATA_BYTES {
            return d;
        }
        m.env = EnvMetadata::default();
        d = m.render();
        let over = encoded_len(&d).saturating_sub(MAX_METADATA_BYTES);
        if over > 0 {
            if let Some(p) = &mut m.platform {
                let mut keep = p.len().saturating_sub(over);
                while !p.is_char_boundary(keep) {
                    keep -= 1;
                }
                p.truncate(keep);
            }
            d = m.render();
        }
        d
    }

    fn render(&self) -> Document {
        let mut d = Document::new();
        if let Some(app) = &self.application_name {
            d.insert("application", doc! { "name": app.as_str() });
        }
        d.insert(
            "driver",
            doc! { "name": self.driver_name.as_str(), "version": self.driver_version.as_str() },
        );
        let mut os = doc! { "type": self.os_type.as_str() };
        if let Some(n) = &self.os_name {
            os.insert("name", n.as_str());
        }
        if let Some(a) = &self.os_architecture {
            os.insert("architecture", a.as_str());
        }
        d.insert("os", os);
        if let Some(p) = &self.platform {
            d.insert("platform", p.as_str());
        }
        if !self.env.is_empty() {
            d.insert("env", self.env.to_document());
        }
        d
    }
}

fn encoded_len(d: &Document) -> usize {
    bson::RawDocumentBuf::try_from(d).map(|r| r.as_bytes().len()).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn faas_detection_rules() {
        assert_eq!(
            FaasPlatform::detect(env(&[("AWS_EXECUTION_ENV", "AWS_Lambda_java8")])),
            Some(FaasPlatform::AwsLambda)
        );
        assert_eq!(FaasPlatform::detect(env(&[("AWS_EXECUTION_ENV", "EC2")])), None);
        assert_eq!(
            FaasPlatform::detect(env(&[("FUNCTIONS_WORKER_RUNTIME", "node")])),
            Some(FaasPlatform::AzureFunc)
        );
        assert_eq!(FaasPlatform::detect(env(&[("K_SERVICE", "svc")])), Some(FaasPlatform::GcpFunc));
        assert_eq!(FaasPlatform::detect(env(&[("FUNCTION_NAME", "f")])), Some(FaasPlatform::GcpFunc));
        assert_eq!(
            FaasPlatform::detect(env(&[("VERCEL", "1"), ("AWS_LAMBDA_RUNTIME_API", "x")])),
            Some(FaasPlatform::Vercel)
        );
        assert_eq!(FaasPlatform::detect(env(&[("FUNCTIONS_WORKER_RUNTIME", "x"), ("K_SERVICE", "y")])), None);
        assert_eq!(FaasPlatform::detect(env(&[])), None);
    }

    #[test]
    fn env_fields_per_platform() {
        let m = ClientMetadata::with_env(
            None,
            env(&[
                ("AWS_EXECUTION_ENV", "AWS_Lambda_java8"),
                ("AWS_REGION", "us-east-2"),
                ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024"),
            ]),
            false,
        )
        .unwrap();
        assert!(m.is_faas());
        let d = m.to_document();
        let e = d.get_document("env").unwrap();
        assert_eq!(e.get_str("name").unwrap(), "aws.lambda");
        assert_eq!(e.get_str("region").unwrap(), "us-east-2");
        assert_eq!(e.get_i32("memory_mb").unwrap(), 1024);

        // A value of the wrong type is dropped silently.
        let m = ClientMetadata::with_env(
            None,
            env(&[("AWS_EXECUTION_ENV", "AWS_Lambda_java8"), ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "big")]),
            false,
        )
        .unwrap();
        assert!(m.to_document().get_document("env").unwrap().get("memory_mb").is_none());

        // No env at all when nothing is detected; container info alone is kept.
        let m = ClientMetadata::with_env(None, env(&[]), false).unwrap();
        assert!(m.to_document().get("env").is_none());
        let m =
            ClientMetadata::with_env(None, env(&[("KUBERNETES_SERVICE_HOST", "10.0.0.1")]), true).unwrap();
        assert!(!m.is_faas());
        let c = m.to_document().get_document("env").unwrap().get_document("container").unwrap().clone();
        assert_eq!(c, doc! { "runtime": "docker", "orchestrator": "kubernetes" });
    }

    #[test]
    fn app_name_limit_and_shape() {
        assert!(ClientMetadata::with_env(Some("x".repeat(129)), env(&[]), false).is_err());
        let m = ClientMetadata::with_env(Some("app".into()), env(&[]), false).unwrap();
        let d = m.to_document();
        assert_eq!(d.get_document("application").unwrap().get_str("name").unwrap(), "app");
        assert_eq!(d.get_document("driver").unwrap().get_str("name").unwrap(), DRIVER_NAME);
        assert!(!d.get_document("os").unwrap().get_str("type").unwrap().is_empty());
    }

    #[test]
    fn truncates_to_512_bytes_in_spec_order() {
        let region = "r".repeat(400);
        let mut m = ClientMetadata::with_env(
            Some("a".repeat(128)),
            env(&[("AWS_LAMBDA_RUNTIME_API", "x"), ("AWS_REGION", region.as_str())]),
            false,
        )
        .unwrap();
        m.platform = Some("p".repeat(300));
        let d = m.to_document();
        assert!(encoded_len(&d) <= MAX_METADATA_BYTES, "{}", encoded_len(&d));
        // The app name and driver info are never dropped.
        assert_eq!(d.get_document("application").unwrap().get_str("name").unwrap().len(), 128);
        assert!(d.get_document("driver").is_ok());
    }

    #[test]
    fn append_driver_info() {
        let mut m = ClientMetadata::with_env(None, env(&[]), false).unwrap();
        let info = DriverInfo { name: "wrap".into(), version: Some("1.0".into()), platform: None };
        m.append(info.clone()).unwrap();
        m.append(info).unwrap();
        assert_eq!(m.driver_name, format!("{DRIVER_NAME}|wrap"));
        assert_eq!(m.driver_version, format!("{DRIVER_VERSION}|1.0"));
        assert!(m.append(DriverInfo { name: "a|b".into(), ..Default::default() }).is_err());
    }
}
