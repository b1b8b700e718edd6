//! `observeTracingMessages` and `expectTracingMessages`: a client entity's OpenTelemetry
//! spans, kept by an in-memory exporter of the OpenTelemetry SDK, then matched as trees (a
//! span's `nested` are the spans whose parent it is).

use std::collections::HashMap;

use actors::otel::OpentelemetryOptions;
use bson::{Bson, Document};
use opentelemetry::trace::SpanId;
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

use super::matching::matches;

type R<T> = Result<T, String>;

/// The query text length the format means by `enableCommandPayload: true`.
const PAYLOAD_MAX_LENGTH: usize = 1000;

/// A client entity's spans.
pub(super) struct TraceObserver {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
}

/// For a client entity with `observeTracingMessages`: its tracing options, set in `options`,
/// and what collects its spans.
pub(super) fn observe(spec: &Document, options: &mut actors::ClientOptions) -> R<Option<TraceObserver>> {
    let Ok(observe) = spec.get_document("observeTracingMessages") else { return Ok(None) };
    if let Some(k) = observe.keys().find(|k| *k != "enableCommandPayload") {
        return Err(format!("observeTracingMessages: unknown field {k}"));
    }
    let payload = observe.get_bool("enableCommandPayload").unwrap_or(false);
    let exporter = InMemorySpanExporter::default();
    // The simple processor exports each span as it ends: nothing to flush before matching.
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    options.tracing = Some(
        OpentelemetryOptions::builder()
            .enabled(true)
            .query_text_max_length(if payload { PAYLOAD_MAX_LENGTH } else { 0 })
            .tracer_provider(provider.clone())
            .build(),
    );
    Ok(Some(TraceObserver { exporter, _provider: provider }))
}

/// Checks one `expectTracingMessages` entry (its `$$sessionLsid`s already replaced by the
/// sessions' ids) against the spans that ended.
pub(super) fn check(observer: Option<&TraceObserver>, expected: &Document) -> R<()> {
    let observer = observer.ok_or("expectTracingMessages for a client without observeTracingMessages")?;
    let spans = observer.exporter.get_finished_spans().map_err(|e| format!("spans: {e}"))?;
    let ids: std::collections::HashSet<SpanId> = spans.iter().map(|s| s.span_context.span_id()).collect();
    let mut roots = Vec::new();
    let mut children: HashMap<SpanId, Vec<&SpanData>> = HashMap::new();
    for span in &spans {
        if ids.contains(&span.parent_span_id) {
            children.entry(span.parent_span_id).or_default().push(span);
        } else {
            roots.push(span);
        }
    }
    roots.sort_by_key(|s| s.start_time);
    for list in children.values_mut() {
        list.sort_by_key(|s| s.start_time);
    }
    let want: Vec<&Document> = expected
        .get_array("spans")
        .map_err(|_| "expectTracingMessages without spans")?
        .iter()
        .filter_map(Bson::as_document)
        .collect();
    let m =
        Matcher { children: &children, ignore_extra: expected.get_bool("ignoreExtraSpans").unwrap_or(false) };
    m.list(&roots, &want, "spans")
}

struct Matcher<'a> {
    children: &'a HashMap<SpanId, Vec<&'a SpanData>>,
    ignore_extra: bool,
}

impl Matcher<'_> {
    /// `actual` against `want` in order; with `ignoreExtraSpans`, spans in between are
    /// skipped (matched by name).
    fn list(&self, actual: &[&SpanData], want: &[&Document], path: &str) -> R<()> {
        let names = || actual.iter().map(|s| s.name.as_ref()).collect::<Vec<_>>().join(", ");
        if !self.ignore_extra {
            if actual.len() != want.len() {
                return Err(format!(
                    "{path}: expected {} spans, got {} ({})",
                    want.len(),
                    actual.len(),
                    names()
                ));
            }
            for (i, (a, w)) in actual.iter().zip(want).enumerate() {
                self.span(a, w, &format!("{path}[{i}]"))?;
            }
            return Ok(());
        }
        let mut rest = actual.iter();
        for (i, w) in want.iter().enumerate() {
            let name = w.get_str("name").unwrap_or("");
            let a = rest
                .find(|s| s.name == name)
                .ok_or_else(|| format!("{path}[{i}]: no span {name} ({})", names()))?;
            self.span(a, w, &format!("{path}[{i}]"))?;
        }
        Ok(())
    }

    fn span(&self, actual: &SpanData, want: &Document, path: &str) -> R<()> {
        let name = want.get_str("name").map_err(|_| format!("{path}: a span without name"))?;
        if actual.name != name {
            return Err(format!("{path}: expected span {name}, got {}", actual.name));
        }
        let attributes = attributes(actual)?;
        let expected = Bson::Document(want.get_document("attributes").cloned().unwrap_or_default());
        matches(&expected, Some(&Bson::Document(attributes)), true, &format!("{path} ({name}).attributes"))?;
        let nested: Vec<&Document> = want
            .get_array("nested")
            .map(|a| a.iter().filter_map(Bson::as_document).collect())
            .unwrap_or_default();
        let children = self.children.get(&actual.span_context.span_id()).map(Vec::as_slice).unwrap_or(&[]);
        self.list(children, &nested, &format!("{path}.nested"))
    }
}

/// A span's attributes as a document; `db.mongodb.lsid` (extended JSON) as the document it
/// stands for.
fn attributes(span: &SpanData) -> R<Document> {
    let mut doc = Document::new();
    for kv in &span.attributes {
        let key = kv.key.as_str();
        let value = match (&kv.value, key) {
            (Value::String(s), "db.mongodb.lsid") => {
                let json: serde_json::Value =
                    serde_json::from_str(s.as_str()).map_err(|e| format!("lsid: {e}"))?;
                Bson::try_from(json).map_err(|e| format!("lsid: {e}"))?
            }
            (Value::Bool(b), _) => Bson::Boolean(*b),
            (Value::I64(i), _) => Bson::Int64(*i),
            (Value::F64(f), _) => Bson::Double(*f),
            (Value::String(s), _) => Bson::String(s.as_str().to_string()),
            (other, _) => Bson::String(other.to_string()),
        };
        doc.insert(key, value);
    }
    Ok(doc)
}
