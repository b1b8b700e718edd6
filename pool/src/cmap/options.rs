//! Pool options (CMAP `ConnectionPoolOptions` plus what the pool needs to run).

use std::time::Duration;

use protocol::uri::UriOptions;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Default `maxPoolSize`.
pub const DEFAULT_MAX_POOL_SIZE: u32 = 100;
/// Default `maxConnecting`.
pub const DEFAULT_MAX_CONNECTING: u32 = 2;
/// Default `connectTimeoutMS`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default interval between two runs of the background maintenance task.
pub const DEFAULT_MAINTENANCE_INTERVAL: Duration = Duration::from_secs(1);

/// Validated options of one pool. Build with [`PoolOptions::builder`] or
/// [`PoolOptions::from_uri_options`].
///
/// Serialized as the options the user set (camelCase, durations in milliseconds), which is
/// what the `PoolCreated` event and log message report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "PoolOptionsBuilder", try_from = "PoolOptionsBuilder")]
pub struct PoolOptions {
    max_pool_size: u32,
    min_pool_size: u32,
    max_connecting: u32,
    max_idle_time: Option<Duration>,
    wait_queue_timeout: Option<Duration>,
    max_wait_queue_size: Option<usize>,
    connect_timeout: Option<Duration>,
    load_balanced: bool,
    maintenance_interval: Option<Duration>,
    /// What was set explicitly, kept for events and logs.
    given: PoolOptionsBuilder,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_pool_size: DEFAULT_MAX_POOL_SIZE,
            min_pool_size: 0,
            max_connecting: DEFAULT_MAX_CONNECTING,
            max_idle_time: None,
            wait_queue_timeout: None,
            max_wait_queue_size: None,
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            load_balanced: false,
            maintenance_interval: Some(DEFAULT_MAINTENANCE_INTERVAL),
            given: PoolOptionsBuilder::default(),
        }
    }
}

impl PoolOptions {
    /// A builder with every option at its default.
    pub fn builder() -> PoolOptionsBuilder {
        PoolOptionsBuilder::default()
    }

    /// The pool options of a parsed connection string (`maxPoolSize`, `minPoolSize`,
    /// `maxConnecting`, `maxIdleTimeMS`, `waitQueueTimeoutMS`, `connectTimeoutMS`,
    /// `loadBalanced`).
    pub fn from_uri_options(uri: &UriOptions) -> Result<Self> {
        PoolOptionsBuilder {
            max_pool_size: uri.max_pool_size,
            min_pool_size: uri.min_pool_size,
            max_connecting: uri.max_connecting,
            max_idle_time_ms: uri.max_idle_time_ms,
            wait_queue_timeout_ms: uri.wait_queue_timeout_ms,
            connect_timeout_ms: uri.connect_timeout_ms,
            load_balanced: uri.load_balanced,
            background_thread_interval_ms: None,
            max_wait_queue_size: None,
        }
        .build()
    }

    /// `maxPoolSize`; 0 means unlimited.
    pub fn max_pool_size(&self) -> u32 {
        self.max_pool_size
    }
    /// `minPoolSize`.
    pub fn min_pool_size(&self) -> u32 {
        self.min_pool_size
    }
    /// `maxConnecting` (always > 0).
    pub fn max_connecting(&self) -> u32 {
        self.max_connecting
    }
    /// `maxIdleTimeMS`; `None` means no limit.
    pub fn max_idle_time(&self) -> Option<Duration> {
        self.max_idle_time
    }
    /// `waitQueueTimeoutMS`; `None` means no limit besides the caller's deadline.
    pub fn wait_queue_timeout(&self) -> Option<Duration> {
        self.wait_queue_timeout
    }
    /// The most check-outs that may wait in the queue at once; past it a check-out fails
    /// at once with [`Error::WaitQueueFull`]. `None` (the default, as in the official
    /// drivers): no limit.
    pub fn max_wait_queue_size(&self) -> Option<usize> {
        self.max_wait_queue_size
    }
    /// `connectTimeoutMS`; `None` means no limit.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }
    /// Whether the pool serves a load balancer (per-serviceId generations, never paused).
    pub fn load_balanced(&self) -> bool {
        self.load_balanced
    }
    /// Interval between background maintenance runs; `None`: no background task (so no
    /// minPoolSize population and no background pruning).
    pub fn maintenance_interval(&self) -> Option<Duration> {
        self.maintenance_interval
    }
    /// The options that were set explicitly.
    pub fn given(&self) -> &PoolOptionsBuilder {
        &self.given
    }
}

impl From<PoolOptions> for PoolOptionsBuilder {
    fn from(o: PoolOptions) -> Self {
        o.given
    }
}

impl TryFrom<PoolOptionsBuilder> for PoolOptions {
    type Error = Error;
    fn try_from(b: PoolOptionsBuilder) -> Result<Self> {
        b.build()
    }
}

/// Builder of [`PoolOptions`]; also their serialized form (only the options that were set).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[must_use]
pub struct PoolOptionsBuilder {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_pool_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min_pool_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_connecting: Option<u32>,
    #[serde(default, rename = "maxIdleTimeMS", skip_serializing_if = "Option::is_none")]
    max_idle_time_ms: Option<u64>,
    #[serde(default, rename = "waitQueueTimeoutMS", skip_serializing_if = "Option::is_none")]
    wait_queue_timeout_ms: Option<u64>,
    #[serde(default, rename = "connectTimeoutMS", skip_serializing_if = "Option::is_none")]
    connect_timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    load_balanced: Option<bool>,
    #[serde(default, rename = "backgroundThreadIntervalMS", skip_serializing_if = "Option::is_none")]
    background_thread_interval_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_wait_queue_size: Option<u32>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl PoolOptionsBuilder {
    /// `maxPoolSize`: most connections (pending, available and in use); 0 = unlimited.
    pub fn max_pool_size(mut self, n: u32) -> Self {
        self.max_pool_size = Some(n);
        self
    }
    /// `minPoolSize`: connections kept open by the background task while the pool is ready.
    pub fn min_pool_size(mut self, n: u32) -> Self {
        self.min_pool_size = Some(n);
        self
    }
    /// `maxConnecting`: most connections established at once; must be > 0.
    pub fn max_connecting(mut self, n: u32) -> Self {
        self.max_connecting = Some(n);
        self
    }
    /// `maxIdleTimeMS`; zero means no limit. Whole milliseconds.
    pub fn max_idle_time(mut self, d: Duration) -> Self {
        self.max_idle_time_ms = Some(millis(d));
        self
    }
    /// `waitQueueTimeoutMS`; zero means no limit. Whole milliseconds.
    pub fn wait_queue_timeout(mut self, d: Duration) -> Self {
        self.wait_queue_timeout_ms = Some(millis(d));
        self
    }
    /// The most check-outs waiting at once (admission control; not a URI option): past it a
    /// check-out fails at once with [`Error::WaitQueueFull`] instead of queuing. 0 means a
    /// check-out never waits. Unset by default (no limit, as in the official drivers).
    pub fn max_wait_queue_size(mut self, n: u32) -> Self {
        self.max_wait_queue_size = Some(n);
        self
    }
    /// `connectTimeoutMS`; zero means no limit. Whole milliseconds.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout_ms = Some(millis(d));
        self
    }
    /// `loadBalanced`.
    pub fn load_balanced(mut self, on: bool) -> Self {
        self.load_balanced = Some(on);
        self
    }
    /// Interval between background maintenance runs (`None`: never run). Must not be zero.
    pub fn maintenance_interval(mut self, interval: Option<Duration>) -> Self {
        self.background_thread_interval_ms = Some(match interval {
            Some(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            None => -1,
        });
        self
    }

    /// Validates and builds the options.
    pub fn build(self) -> Result<PoolOptions> {
        let invalid = |message: String| Error::InvalidOptions { message };
        let max_pool_size = self.max_pool_size.unwrap_or(DEFAULT_MAX_POOL_SIZE);
        let min_pool_size = self.min_pool_size.unwrap_or(0);
        if max_pool_size > 0 && min_pool_size > max_pool_size {
            return Err(invalid(format!(
                "minPoolSize ({min_pool_size}) must not exceed maxPoolSize ({max_pool_size})"
            )));
        }
        let max_connecting = self.max_connecting.unwrap_or(DEFAULT_MAX_CONNECTING);
        if max_connecting == 0 {
            return Err(invalid("maxConnecting must be greater than 0".into()));
        }
        let nonzero_ms = |ms: Option<u64>| ms.filter(|&m| m > 0).map(Duration::from_millis);
        let maintenance_interval = match self.background_thread_interval_ms {
            None => Some(DEFAULT_MAINTENANCE_INTERVAL),
            Some(0) => return Err(invalid("the maintenance interval must not be 0".into())),
            Some(n) if n < 0 => None,
            Some(n) => Some(Duration::from_millis(n.unsigned_abs())),
        };
        Ok(PoolOptions {
            max_pool_size,
            min_pool_size,
            max_connecting,
            max_idle_time: nonzero_ms(self.max_idle_time_ms),
            wait_queue_timeout: nonzero_ms(self.wait_queue_timeout_ms),
            max_wait_queue_size: self.max_wait_queue_size.map(|n| n as usize),
            connect_timeout: match self.connect_timeout_ms {
                None => Some(DEFAULT_CONNECT_TIMEOUT),
                ms => nonzero_ms(ms),
            },
            load_balanced: self.load_balanced.unwrap_or(false),
            maintenance_interval,
            given: self,
        })
    }

    /// `maxPoolSize` if set.
    pub fn given_max_pool_size(&self) -> Option<u32> {
        self.max_pool_size
    }
    /// `minPoolSize` if set.
    pub fn given_min_pool_size(&self) -> Option<u32> {
        self.min_pool_size
    }
    /// `maxConnecting` if set.
    pub fn given_max_connecting(&self) -> Option<u32> {
        self.max_connecting
    }
    /// `maxIdleTimeMS` if set.
    pub fn given_max_idle_time_ms(&self) -> Option<u64> {
        self.max_idle_time_ms
    }
    /// `waitQueueTimeoutMS` if set.
    pub fn given_wait_queue_timeout_ms(&self) -> Option<u64> {
        self.wait_queue_timeout_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let o = PoolOptions::builder().build().unwrap();
        assert_eq!(o.max_pool_size(), 100);
        assert_eq!(o.min_pool_size(), 0);
        assert_eq!(o.max_connecting(), 2);
        assert_eq!(o.connect_timeout(), Some(Duration::from_secs(10)));
        assert_eq!(o.max_idle_time(), None);
        assert_eq!(o.wait_queue_timeout(), None);
        assert!(!o.load_balanced());
        assert_eq!(o, PoolOptions::default());
    }

    #[test]
    fn validation() {
        assert!(PoolOptions::builder().min_pool_size(5).max_pool_size(3).build().is_err());
        // 0 means unlimited, so any minPoolSize goes.
        assert!(PoolOptions::builder().min_pool_size(5).max_pool_size(0).build().is_ok());
        assert!(PoolOptions::builder().max_connecting(0).build().is_err());
        let zero = Duration::ZERO;
        assert!(PoolOptions::builder().maintenance_interval(Some(zero)).build().is_err());
        let o = PoolOptions::builder().connect_timeout(zero).maintenance_interval(None).build().unwrap();
        assert_eq!(o.connect_timeout(), None);
        assert_eq!(o.maintenance_interval(), None);
    }

    #[test]
    fn serde_keeps_only_given_options() {
        let o = PoolOptions::builder()
            .max_pool_size(3)
            .wait_queue_timeout(Duration::from_millis(50))
            .build()
            .unwrap();
        let json = serde_json::to_value(&o).unwrap();
        assert_eq!(json, serde_json::json!({"maxPoolSize": 3, "waitQueueTimeoutMS": 50}));
        let back: PoolOptions = serde_json::from_value(json).unwrap();
        assert_eq!(back, o);
        let bad = serde_json::json!({"minPoolSize": 4, "maxPoolSize": 2});
        assert!(serde_json::from_value::<PoolOptions>(bad).is_err());
    }

    #[test]
    fn from_uri() {
        let uri = UriOptions {
            max_pool_size: Some(7),
            min_pool_size: Some(1),
            max_connecting: Some(3),
            max_idle_time_ms: Some(1500),
            wait_queue_timeout_ms: Some(0),
            connect_timeout_ms: Some(2000),
            load_balanced: Some(true),
            ..Default::default()
        };
        let o = PoolOptions::from_uri_options(&uri).unwrap();
        assert_eq!(o.max_pool_size(), 7);
        assert_eq!(o.min_pool_size(), 1);
        assert_eq!(o.max_connecting(), 3);
        assert_eq!(o.max_idle_time(), Some(Duration::from_millis(1500)));
        assert_eq!(o.wait_queue_timeout(), None);
        assert_eq!(o.connect_timeout(), Some(Duration::from_secs(2)));
        assert!(o.load_balanced());
    }
}
