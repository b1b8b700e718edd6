#!/usr/bin/env python3
"""What of the official `mongodb` crate's public API ours lacks, from the rustdoc JSON of both.

Every public path of the official crate (through its re-exports) is looked up in ours: the
path must exist with the same kind, and a struct, enum or trait must have the same public
fields, variants, inherent methods and trait implementations. The report lists what is
missing; what only we have is not reported (our additions sit beside the official items).

usage: api_gap.py OFFICIAL.json OURS.json [OTHER-CRATE-OF-OURS.json...] > API-GAPS.md

An item ours re-exports from another crate of ours (protocol, selection) is looked up in that
crate's JSON, by the path it is defined at, and its members compared as well.
(`make api-gap` builds both JSON files with the nightly toolchain and writes API-GAPS.md.)
"""
import json
import sys
from collections import defaultdict


# Traits named with their arguments (and the type they are for) in the report.
CONVERSIONS = {"From", "TryFrom"}
CONVERSION_MEMBERS = {"impl " + c for c in CONVERSIONS}


def render(t):
    """A type of the rustdoc JSON, by its last path segments (enough to tell impls apart)."""
    if not isinstance(t, dict):
        return "?"
    if "resolved_path" in t:
        r = t["resolved_path"]
        return str(r.get("path", "?")).split("::")[-1] + render_args(r.get("args"))
    if "primitive" in t:
        return t["primitive"]
    if "generic" in t:
        return t["generic"]
    if "borrowed_ref" in t:
        return "&" + render(t["borrowed_ref"].get("type"))
    if "slice" in t:
        return "[" + render(t["slice"]) + "]"
    if "tuple" in t:
        return "(" + ", ".join(render(x) for x in t["tuple"]) + ")"
    return next(iter(t), "?")


def render_args(args):
    if not isinstance(args, dict) or "angle_bracketed" not in args:
        return ""
    parts = [render(a["type"]) for a in args["angle_bracketed"].get("args", []) if "type" in a]
    return "<" + ", ".join(parts) + ">" if parts else ""


def kind_of(item):
    inner = item.get("inner", {})
    return next(iter(inner)) if isinstance(inner, dict) and inner else "?"


class Api:
    """The public paths of one crate's rustdoc JSON, with their kinds and members."""

    def __init__(self, path):
        doc = json.load(open(path))
        self.index = doc["index"]
        self.summaries = doc.get("paths", {})
        self.paths = {}
        self.seen = set()
        self.walk(doc["root"], "")

    def defined_at(self, item_id):
        """Where an item of another crate is defined: `crate::module::Name`."""
        summary = self.summaries.get(str(item_id))
        return "::".join(summary["path"]) if summary else None

    def conversions(self):
        """Every `impl From<X> for Y` of this crate, wherever rustdoc lists it: one between
        types of two crates of ours shows on only one of them."""
        found = set()
        for item in self.index.values():
            kind = kind_of(item)
            if kind in ("struct", "enum"):
                found.update(m for m in self.members(item, kind) if m.split("<")[0] in CONVERSION_MEMBERS)
        return found

    def local_items(self):
        """This crate's own items by their definition path."""
        return {
            "::".join(s["path"]): item_id
            for item_id, s in self.summaries.items()
            if s.get("crate_id") == 0 and item_id in self.index
        }

    def item(self, item_id):
        return self.index.get(str(item_id))

    def walk(self, mod_id, prefix):
        if (mod_id, prefix) in self.seen:
            return
        self.seen.add((mod_id, prefix))
        module = self.item(mod_id)
        if not module:
            return
        for child in module["inner"]["module"]["items"]:
            item = self.item(child)
            if not item or item.get("visibility") != "public":
                continue
            if kind_of(item) == "use":
                self.use(item["inner"]["use"], prefix)
            else:
                self.add(item, child, prefix + (item.get("name") or "?"))

    def use(self, use, prefix):
        target = self.item(use.get("id")) if use.get("id") is not None else None
        if target is None:
            self.paths[prefix + use["name"]] = ("external", self.defined_at(use.get("id")))
        elif use.get("is_glob"):
            if kind_of(target) == "module":
                self.walk(use["id"], prefix)
        else:
            self.add(target, use["id"], prefix + use["name"])

    def add(self, item, item_id, path):
        kind = kind_of(item)
        if kind == "module":
            self.paths[path] = ("module", [])
            self.walk(item_id, path + "::")
        else:
            self.paths[path] = (kind, self.members(item, kind))

    def members(self, item, kind):
        if kind not in ("struct", "enum", "trait"):
            return []
        inner = item["inner"][kind]
        names = set()
        if kind == "struct":
            plain = inner.get("kind", {})
            for f in plain.get("plain", {}).get("fields", []) if isinstance(plain, dict) else []:
                fi = self.item(f)
                if fi and fi.get("visibility") == "public":
                    names.add("field " + fi["name"])
        if kind == "enum":
            names.update("variant " + self.item(v)["name"] for v in inner.get("variants", []) if self.item(v))
        if kind == "trait":
            names.update("method " + self.item(m)["name"] for m in inner.get("items", []) if self.item(m))
        for i in inner.get("impls", []):
            imp = (self.item(i) or {}).get("inner", {}).get("impl", {})
            if imp.get("blanket_impl") is not None:
                # `impl<T: Bound> Trait for T`: a property of the traits in the dependency
                # tree (either, tokio-util's compat...), which a user's own imports bring to
                # any type, not of this type.
                continue
            if imp.get("trait") is not None:
                trait = str(imp["trait"].get("path") or imp["trait"].get("name") or "?").split("::")[-1]
                if trait in CONVERSIONS:
                    # Which conversion matters: `From<u32> for Acknowledgment`, not just "From".
                    trait += render_args(imp["trait"].get("args")) + " for " + render(imp.get("for"))
                names.add("impl " + trait)
                continue
            for m in imp.get("items", []):
                mi = self.item(m)
                if mi and mi.get("visibility") == "public" and mi.get("name"):
                    names.add("method " + mi["name"])
        return sorted(names)


def main():
    official, ours = Api(sys.argv[1]), Api(sys.argv[2])
    # Our other crates: each item by its definition path, with its kind and members.
    others = {}
    conversions = ours.conversions()
    for extra in sys.argv[3:]:
        api = Api(extra)
        conversions |= api.conversions()
        for defined, item_id in api.local_items().items():
            item = api.item(item_id)
            others[defined] = (kind_of(item), api.members(item, kind_of(item)))
    missing, different, elsewhere, partial = [], [], [], defaultdict(list)
    for path, (kind, members) in sorted(official.paths.items()):
        if path not in ours.paths:
            missing.append(f"`{path}` ({kind})")
            continue
        our_kind, our_members = ours.paths[path]
        if our_kind == "external" and kind != "external":
            if our_members in others:
                our_kind, our_members = others[our_members]
            else:
                # Defined in a crate whose JSON was not given: members not compared.
                elsewhere.append(f"`{path}` ({kind})")
                continue
        if kind not in ("module", "external") and our_kind != kind:
            different.append(f"`{path}`: {kind} there, {our_kind} here")
        for m in members:
            # Auto trait impls (Send, Sync, Unpin...) are compared too: a user relies on
            # them as much as on a method.
            if m not in our_members and m not in conversions:
                partial[path].append(m)
    total = len(official.paths)
    print("# What the official `mongodb` API has and ours does not\n")
    print("Generated by `make api-gap` (`integration-tests/compat/api_gap.py`): the official crate's")
    print("public paths, through its re-exports, looked up in ours. Issue 40 empties this list.\n")
    print(f"- official public paths: {total}")
    print(f"- missing here: {len(missing)}")
    print(f"- present with another kind: {len(different)}")
    print(f"- present with members missing: {len(partial)} ({sum(len(v) for v in partial.values())} members)")
    print(f"- re-exported from a crate whose JSON was not given, members not compared: {len(elsewhere)}\n")
    print("## Missing paths\n")
    for m in missing:
        print(f"- {m}")
    print("\n## Present with another kind\n")
    for d in different:
        print(f"- {d}")
    print("\n## Re-exported from a crate whose JSON was not given (members not compared)\n")
    for e in elsewhere:
        print(f"- {e}")
    print("\n## Members missing\n")
    for path, ms in sorted(partial.items()):
        print(f"- `{path}`: " + ", ".join(f"`{m}`" for m in ms))


if __name__ == "__main__":
    main()
