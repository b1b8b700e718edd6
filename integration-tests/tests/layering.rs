//! The layering of the crates, read from their source: which file imports which.
//!
//! Every path a file names (`use` trees and paths in code: `crate::…`, `super::…`,
//! `self::…`) is resolved to the file that defines the item, through `pub use` re-exports. A
//! re-export itself is not a dependency (it only names an item elsewhere); test modules are
//! left out. The test fails on any import circle between two files of a crate (in the strict
//! reading below for every crate), on a module of `actors` that imports through the crate
//! root, and on an arrow that points up a layer:
//!
//! - the executor and the operations (`client/executor/`, `client/ops/`) never name the
//!   builders or the handles (`client/action/`, `client/collection.rs`, `client/database.rs`);
//! - the actor core (`cluster/`) and observability (`observe/`) never name `client/`, and the
//!   actor core never names the official event shapes (`observe/official/`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's files by module path (`["client", "executor"]` for `client/executor/mod.rs`).
struct Crate {
    files: BTreeMap<Vec<String>, Module>,
    /// The strict reading: an arrow also goes to the file a path names when that file only
    /// re-exports the item, `use child::…` counts, and so does a re-exported name the file's
    /// own code uses. Otherwise arrows go only to the file that defines the item.
    strict: bool,
}

/// One file: what its `use` declarations bind, its glob imports, the items it defines, and
/// the paths its code names.
#[derive(Default)]
struct Module {
    file: String,
    /// Name → the path a `use` binds it to, and whether that `use` is `pub` (a re-export).
    bindings: BTreeMap<String, (Vec<String>, bool)>,
    globs: Vec<Vec<String>>,
    defines: BTreeSet<String>,
    /// Every absolute path named by a private `use` or by code.
    named: Vec<Vec<String>>,
    /// `use x::…` paths that do not start with `crate`, `super` or `self`: a child module's
    /// (made absolute once every file is known) or an extern crate's. With the binding and
    /// whether the `use` is `pub`.
    relative: Vec<(String, Vec<String>, bool)>,
    /// How often each identifier appears in the file's code outside `use` declarations.
    words: BTreeMap<String, usize>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The code before its first `#[cfg(test)]` module, without comments and string literals.
fn production_code(source: &str) -> String {
    let cut = source.find("#[cfg(test)]\nmod tests").unwrap_or(source.len());
    let src = &source[..cut];
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal ('"' would open a string otherwise); lifetimes are kept.
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Splits code into identifiers, `::` and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// Expands a `use` tree starting at `toks[*i]` into (binding name, path) pairs; a glob
/// binds `*`.
fn use_tree(toks: &[String], i: &mut usize, prefix: &[String], out: &mut Vec<(String, Vec<String>)>) {
    let mut path = prefix.to_vec();
    while *i < toks.len() {
        let t = toks[*i].as_str();
        match t {
            "{" => {
                *i += 1;
                while *i < toks.len() && toks[*i] != "}" {
                    use_tree(toks, i, &path, out);
                    if *i < toks.len() && toks[*i] == "," {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "*" => {
                *i += 1;
                out.push(("*".into(), path));
                return;
            }
            "::" => *i += 1,
            "," | "}" | ";" => break,
            "as" => {
                let alias = toks.get(*i + 1).cloned().unwrap_or_default();
                *i += 2;
                out.push((alias, path));
                return;
            }
            _ => {
                path.push(t.to_string());
                *i += 1;
            }
        }
    }
    if let Some(last) = path.last().cloned() {
        let name = if last == "self" {
            path.pop();
            path.last().cloned().unwrap_or_default()
        } else {
            last
        };
        out.push((name, path));
    }
}

/// `path` made absolute from module `module` (`crate`, `super` and `self` resolved); `None`
/// for a path into another crate.
fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super") | Some("self") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

fn parse(module: &[String], file: String, source: &str) -> Module {
    let code = production_code(source);
    let toks = tokens(&code);
    let mut m = Module { file, ..Module::default() };
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        let public = t == "pub";
        let at_use = if public {
            // `pub use`, `pub(crate) use`
            let mut j = i + 1;
            if toks.get(j).map(String::as_str) == Some("(") {
                while j < toks.len() && toks[j] != ")" {
                    j += 1;
                }
                j += 1;
            }
            (toks.get(j).map(String::as_str) == Some("use")).then_some(j)
        } else {
            (t == "use").then_some(i)
        };
        if let Some(u) = at_use {
            let mut j = u + 1;
            let mut pairs = Vec::new();
            use_tree(&toks, &mut j, &[], &mut pairs);
            for (name, path) in pairs {
                // Relative `use x::…` in a 2018 crate names a child module or an extern crate.
                let rooted = match path.first().map(String::as_str) {
                    Some("crate" | "super" | "self") => absolute(module, &path),
                    _ => None,
                };
                let Some(abs) = rooted else {
                    m.relative.push((name, path, public));
                    continue;
                };
                if name == "*" {
                    m.globs.push(abs.clone());
                } else {
                    m.bindings.insert(name, (abs.clone(), public));
                }
                if !public {
                    m.named.push(abs);
                }
            }
            i = j;
            continue;
        }
        if matches!(t, "struct" | "enum" | "fn" | "trait" | "type" | "const" | "static" | "mod" | "union") {
            if let Some(name) = toks.get(i + 1) {
                m.defines.insert(name.clone());
            }
        }
        if matches!(t, "crate" | "super" | "self")
            && toks.get(i + 1).map(String::as_str) == Some("::")
            && (i == 0 || toks[i - 1] != "::")
        {
            let mut path = vec![t.to_string()];
            let mut j = i + 1;
            while toks.get(j).map(String::as_str) == Some("::") {
                match toks.get(j + 1) {
                    Some(n) if n.chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_') => {
                        path.push(n.clone());
                        j += 2;
                    }
                    _ => break,
                }
            }
            if let Some(abs) = absolute(module, &path) {
                m.named.push(abs);
            }
            i = j;
            continue;
        }
        *m.words.entry(toks[i].clone()).or_default() += 1;
        i += 1;
    }
    m
}

fn load(src: &Path, strict: bool) -> Crate {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source directory").flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(src, &mut paths);
    let mut files = BTreeMap::new();
    for p in paths {
        let rel = p.strip_prefix(src).expect("under src");
        let mut module: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        let last = module.pop().unwrap_or_default();
        if !matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs") {
            module.push(last.trim_end_matches(".rs").to_string());
        }
        if module.first().is_some_and(|m| m == "bin") {
            continue;
        }
        let source = std::fs::read_to_string(&p).expect("a readable source file");
        let name = rel.to_string_lossy().into_owned();
        files.insert(module.clone(), parse(&module, name, &source));
    }
    let children: BTreeSet<Vec<String>> = files.keys().cloned().collect();
    for (module, m) in files.iter_mut().filter(|_| strict) {
        // `use child::…` names a child module of this file.
        for (name, path, public) in std::mem::take(&mut m.relative) {
            let mut abs = module.clone();
            abs.push(path[0].clone());
            if !children.contains(&abs) {
                continue;
            }
            abs.extend(path[1..].iter().cloned());
            if name == "*" {
                m.globs.push(abs.clone());
            } else {
                m.bindings.insert(name, (abs.clone(), public));
            }
            if !public {
                m.named.push(abs);
            }
        }
        // A re-exported name the file's own code uses too is a dependency of the file.
        let used: Vec<Vec<String>> = m
            .bindings
            .iter()
            .filter(|(name, (_, public))| *public && m.words.contains_key(*name))
            .map(|(_, (path, _))| path.clone())
            .collect();
        m.named.extend(used);
    }
    Crate { files, strict }
}

impl Crate {
    /// The file that defines what `path` names, through re-exports (depth-limited).
    fn resolve(&self, path: &[String], depth: usize) -> Option<Vec<String>> {
        // The longest prefix that is a file.
        let mut k = path.len();
        while k > 0 && !self.files.contains_key(&path[..k]) {
            k -= 1;
        }
        let module = path[..k].to_vec();
        let Some(m) = self.files.get(&module) else { return Some(module) };
        let Some(item) = path.get(k) else { return Some(module) };
        if depth == 0 || m.defines.contains(item) {
            return Some(module);
        }
        if let Some((target, _)) = m.bindings.get(item) {
            let mut next = target.clone();
            next.extend(path[k + 1..].iter().cloned());
            return self.resolve(&next, depth - 1);
        }
        for glob in &m.globs {
            let mut next = glob.clone();
            next.extend(path[k..].iter().cloned());
            if let Some(found) = self.resolve(&next, depth - 1) {
                if found != *glob || self.files.get(glob).is_some_and(|g| g.defines.contains(item)) {
                    return Some(found);
                }
            }
        }
        Some(module)
    }

    /// File → the files it depends on.
    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, m) in &self.files {
            let out = edges.entry(m.file.clone()).or_default();
            for path in &m.named {
                // Both the file the path names (as a `use` line reads) and the one that defines
                // the item (through re-exports): a file that re-exports an item and also imports
                // is a room of the house like any other.
                let named = if self.strict { self.resolve(path, 0) } else { None };
                let defining = self.resolve(path, 16);
                for target in named.into_iter().chain(defining) {
                    // A module naming its own descendants' items through a private `use` is how
                    // a parent builds on its children; naming the parent back is what a circle
                    // needs.
                    if target != *module {
                        if let Some(t) = self.files.get(&target) {
                            out.insert(t.file.clone());
                        }
                    }
                }
            }
        }
        edges
    }
}

/// The import circles: strongly connected components of more than one file.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let l = self.low[w].min(self.low[v]);
                    self.low.insert(v, l);
                } else if self.on_stack.contains(w) {
                    let l = self.index[w].min(self.low[v]);
                    self.low.insert(v, l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// The arrows of `edges` that break a rule: from a file `from` matches to one `to` matches.
fn violations(
    edges: &BTreeMap<String, BTreeSet<String>>,
    from: impl Fn(&str) -> bool,
    to: impl Fn(&str) -> bool,
) -> Vec<String> {
    edges
        .iter()
        .filter(|(f, _)| from(f))
        .flat_map(|(f, ts)| ts.iter().filter(|t| to(t)).map(move |t| format!("{f} -> {t}")))
        .collect()
}

/// Checks the files of the crate whose sources are in `src`; every arrow inside a circle is
/// printed, to show where to cut it.
fn assert_no_circles(name: &str, src: &Path, strict: bool) -> BTreeMap<String, BTreeSet<String>> {
    let krate = load(src, strict);
    assert!(krate.files.len() > 5, "{name}: read {} files from {}", krate.files.len(), src.display());
    let edges = krate.edges();
    let found = circles(&edges);
    let arrows: Vec<String> = found
        .iter()
        .flat_map(|c| {
            let edges = &edges;
            c.iter().flat_map(move |f| {
                edges[f].iter().filter(|t| c.contains(t)).map(move |t| format!("{f} -> {t}"))
            })
        })
        .collect();
    assert!(
        found.is_empty(),
        "{name}: files that import each other in a circle: {found:#?}\narrows: {arrows:#?}"
    );
    edges
}

#[test]
fn actors_has_no_circle_and_no_arrow_up_a_layer() {
    let edges = assert_no_circles("actors", &root().join("actors/src"), false);
    let low = |f: &str| f.starts_with("client/executor/") || f.starts_with("client/ops/");
    let handles =
        |f: &str| f.starts_with("client/action/") || f == "client/collection.rs" || f == "client/database.rs";
    let up = violations(&edges, low, handles);
    assert!(up.is_empty(), "the executor and the operations name the builders or handles: {up:#?}");
    // The three floors: the actor core and observability never name the client.
    let up = violations(&edges, |f| f.starts_with("cluster/"), |f| f.starts_with("client/"));
    assert!(up.is_empty(), "the actor core (cluster/) names client/: {up:#?}");
    let up = violations(&edges, |f| f.starts_with("observe/"), |f| f.starts_with("client/"));
    assert!(up.is_empty(), "observability (observe/) names client/: {up:#?}");
    // The test reads what it should: the executor builds on its operations.
    assert!(edges["client/executor/mod.rs"].contains("client/executor/operation.rs"), "{edges:#?}");
}

/// The actor core (`cluster/`, the selection actor's folder included) has no circle between
/// two of its files even in the strict reading (through re-exports and `use child::…`).
#[test]
fn actors_cluster_floor_has_no_circle_in_the_strict_reading() {
    let krate = load(&root().join("actors/src"), true);
    let floor = |f: &str| f.starts_with("cluster/");
    let edges: BTreeMap<String, BTreeSet<String>> = krate
        .edges()
        .into_iter()
        .filter(|(f, _)| floor(f))
        .map(|(f, ts)| (f, ts.into_iter().filter(|t| floor(t)).collect()))
        .collect();
    assert!(edges.len() > 15, "{edges:#?}");
    let found = circles(&edges);
    assert!(found.is_empty(), "cluster/ has circles: {found:#?} ({edges:#?})");
    assert!(edges["cluster/selection/handle.rs"].contains("cluster/selection/pipeline.rs"), "{edges:#?}");
}

/// All of `actors` in the strict reading: no circle between two files, and no module names an
/// item through the crate root's re-exports (`crate::Error`, `crate::options::…`) but through
/// the file that holds it, so `lib.rs` is the top of the house, not its middle.
#[test]
fn actors_has_no_circle_in_the_strict_reading_and_imports_nothing_through_its_root() {
    let edges = assert_no_circles("actors (strict)", &root().join("actors/src"), true);
    let through_root = violations(&edges, |f| f != "lib.rs", |t| t == "lib.rs");
    assert!(through_root.is_empty(), "modules that import through the crate root: {through_root:#?}");
    // The official event shapes are an adapter over ours: the actor core never names them.
    let adapters = violations(&edges, |f| f.starts_with("cluster/"), |t| t.starts_with("observe/official/"));
    assert!(adapters.is_empty(), "the actor core names the official event shapes: {adapters:#?}");
    assert!(edges["client/executor/mod.rs"].contains("client/executor/operation.rs"), "{edges:#?}");
}

#[test]
fn pool_has_no_circle() {
    let edges = assert_no_circles("pool", &root().join("pool/src"), true);
    assert!(!edges["cmap/pool.rs"].is_empty());
}

#[test]
fn protocol_has_no_circle() {
    let edges = assert_no_circles("protocol", &root().join("protocol/src"), true);
    assert!(!edges.is_empty());
}

#[test]
fn selection_has_no_circle() {
    let edges = assert_no_circles("selection", &root().join("selection/src"), true);
    assert!(edges["select.rs"].contains("suitability.rs"), "{edges:#?}");
}

/// The simulator: no circle between any two of its files; its `state/` layer (stores, the
/// query language, the oplog and session table, cursors, transactions, change events, a member
/// process's node) names nothing above it; the commands never name the server loop, the
/// deployment's start-up or the public API; and each command family fits 800 lines.
#[test]
fn simulator_has_no_circle_and_its_state_sits_below_the_commands() {
    let src = root().join("integration-tests/sim/src");
    let edges = assert_no_circles("simulator", &src, true);
    let state = |f: &str| f.starts_with("state/");
    let leaves = ["error.rs", "options.rs", "counters.rs", "failpoint.rs", "bson_compat.rs"];
    let up = violations(&edges, state, |t| !state(t) && !leaves.contains(&t));
    assert!(up.is_empty(), "the simulator's state names what sits above it: {up:#?}");
    let top = ["server.rs", "cluster.rs", "lb.rs", "lib.rs"];
    let up = violations(&edges, |f| f.starts_with("commands/"), |t| top.contains(&t));
    assert!(up.is_empty(), "the simulator's commands name the server or the public API: {up:#?}");
    // The test reads what it should: the commands stand on the state.
    assert!(edges["commands/txn.rs"].contains("state/txn.rs"), "{edges:#?}");
    assert!(edges["commands/crud.rs"].contains("commands/exec.rs"), "{edges:#?}");
    let mut long = Vec::new();
    for entry in std::fs::read_dir(src.join("commands")).expect("commands/") {
        let path = entry.expect("entry").path();
        let lines = std::fs::read_to_string(&path).expect("read").lines().count();
        if lines > 800 {
            long.push(format!("{}: {lines} lines", path.display()));
        }
    }
    assert!(long.is_empty(), "a command family over 800 lines: {long:?}");
}

#[test]
fn the_reader_resolves_re_exports_and_nested_use_trees() {
    let module = vec!["a".to_string()];
    let m = parse(
        &module,
        "a.rs".into(),
        "use super::{b::{C, D as E}, c::*};\npub use self::x::Y;\nfn f() { crate::z::w(); }\n#[cfg(test)]\nmod tests { use crate::q::R; }",
    );
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(m.bindings.get("C").map(|b| b.0.clone()), Some(s(&["b", "C"])));
    assert_eq!(m.bindings.get("E").map(|b| b.0.clone()), Some(s(&["b", "D"])));
    assert_eq!(m.bindings.get("Y"), Some(&(s(&["a", "x", "Y"]), true)));
    assert_eq!(m.globs, vec![s(&["c"])]);
    assert!(m.named.contains(&s(&["z", "w"])), "{:?}", m.named);
    assert!(!m.named.iter().any(|p| p.contains(&"q".to_string())), "test modules are left out");
    assert!(m.defines.contains("f"));
}

/// One builder per file in `client/action/`: a builder is a `#[must_use]` public struct, and
/// a file holds at most one (the shared opening of the `find_one_and_*` builders, the macros
/// and the re-exports hold none).
#[test]
fn each_builder_has_a_file_of_its_own() {
    let dir = root().join("actors/src/client/action");
    let mut builders = 0;
    for entry in std::fs::read_dir(&dir).expect("action/") {
        let path = entry.expect("an entry").path();
        let code = production_code(&std::fs::read_to_string(&path).expect("a source file"));
        let lines: Vec<&str> = code.lines().collect();
        let found: Vec<&str> = lines
            .windows(2)
            .filter(|w| w[0].trim_start().starts_with("#[must_use") && w[1].starts_with("pub struct "))
            .map(|w| w[1])
            .collect();
        assert!(found.len() <= 1, "{} holds {} builders: {found:?}", path.display(), found.len());
        builders += found.len();
    }
    // find, find_one, aggregate, count_documents, estimated_document_count, distinct,
    // insert_one, insert_many, update, replace_one, delete, the three find_one_and_*,
    // bulk_write, client_bulk_write, watch, create_index, drop_index, list_indexes,
    // drop_collection, drop_database, rename, create_collection, list_collections,
    // list_databases, run_command, run_cursor_command, create_search_index,
    // update_search_index, drop_search_index, list_search_indexes, start_session,
    // start_transaction, commit_transaction, abort_transaction, shutdown,
    // warm_connection_pool, parse_connection_string; GridFS: open_upload_stream, open_download_stream(_by_name), and
    // the bucket's find, find_one, delete, delete_by_name, rename, rename_by_name, drop.
    assert_eq!(builders, 49);
}

/// Load-balanced pinning stays a message of the selection actor's mailbox, and the client
/// reaches it through one small type: only `client/pinned.rs` names the pinning messages.
#[test]
fn pinning_is_reached_through_one_client_side_type() {
    let client = root().join("actors/src/client");
    let mut stack = vec![client.clone()];
    let mut naming = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let code = production_code(&std::fs::read_to_string(&path).expect("a source file"));
            let words = tokens(&code);
            // `Unpin` the message, not the std trait a bound names.
            let unpin_message = code.contains("Unpin {");
            if unpin_message || words.iter().any(|w| matches!(w.as_str(), "PinConnection" | "TakePinned")) {
                naming.push(path.strip_prefix(&client).expect("under client/").display().to_string());
            }
        }
    }
    assert_eq!(naming, vec!["pinned.rs".to_string()]);
}
