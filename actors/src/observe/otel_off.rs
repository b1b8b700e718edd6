//! What the executor calls when the `opentelemetry` feature is off: the same names as
//! `otel.rs`, doing nothing, so the executor has no `cfg` and its values carry nothing.

use bson::Document;
use protocol::ServerAddress;

use crate::error::Error;

/// Tracing is compiled out.
#[derive(Clone, Copy, Default)]
pub(crate) struct Tracing;

impl Tracing {
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        false
    }

    #[inline(always)]
    pub(crate) fn clock(&self) -> Clock {
        Clock
    }

    #[inline(always)]
    pub(crate) fn operation(
        &self,
        _: Clock,
        _: &str,
        _: &str,
        _: Option<&str>,
        _: Option<&TransactionSpan>,
    ) -> OperationSpan {
        OperationSpan(())
    }

    #[inline(always)]
    pub(crate) fn transaction(&self) -> TransactionSpan {
        TransactionSpan(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock;

#[derive(Clone, Debug, Default)]
pub(crate) struct OperationSpan(());

impl OperationSpan {
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        false
    }

    #[inline(always)]
    pub(crate) fn end<T>(&self, _: &Result<T, Error>) {}

    #[inline(always)]
    pub(crate) fn command(&self, _: CommandInfo<'_>) -> CommandSpan {
        CommandSpan(())
    }
}

#[allow(dead_code)]
pub(crate) struct CommandInfo<'a> {
    pub name: &'a str,
    pub db: &'a str,
    pub collection: Option<&'a str>,
    pub address: &'a ServerAddress,
    pub driver_connection_id: u32,
    pub server_connection_id: Option<i64>,
    pub lsid: Option<Document>,
    pub txn_number: Option<i64>,
    pub cursor_id: Option<i64>,
    pub text: &'a mut dyn FnMut() -> Option<Document>,
}

#[derive(Default)]
pub(crate) struct CommandSpan(());

impl CommandSpan {
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        false
    }

    #[inline(always)]
    pub(crate) fn succeeded(&self, _: i64) {}

    #[inline(always)]
    pub(crate) fn failed(&self, _: &Error) {}
}

#[derive(Clone, Debug, Default)]
pub(crate) struct TransactionSpan(());

impl TransactionSpan {
    #[inline(always)]
    pub(crate) fn end(&self) {}
}
