#!/usr/bin/env python3
"""protogen: generate samsa's C codecs from Kafka's message definitions.

Reads the JSON message specs (requests, responses, headers, KRaft metadata
records, coordinator keys/values, raft state) and writes, per spec file, a
header and a source under core/proto/gen/:

  <name>_t                   one C struct covering every version
  <name>_init(m)             set every field to its default
  <name>_decode(r, v, m)     read version v from a kreader (0 / -1)
  <name>_encode(w, v, m)     write version v to a kwriter

plus kapi.{h,c} (the API key table used for dispatch, ApiVersions, the
fuzzer and the round-trip tests), kmeta.{h,c} (metadata record types) and a
fill routine per struct for the unit tests (tests/unit/gen/).

Usage: protogen.py SPEC_DIR... --out core/proto/gen --test-out tests/unit/gen

The generated files are committed; the build never runs this script.
"""

import argparse
import json
import os
import re
import sys

MAXV = 0x7FFF

C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
    "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
    "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
    "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
    "true", "false", "errno", "m", "r", "w", "v",
}

PRIMS = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "float64": "double",
    "string": "kstr_t", "bytes": "kbytes_t", "records": "krecords_t", "uuid": "kuuid_t",
}
INTS = {"int8", "int16", "uint16", "int32", "uint32", "int64"}


def strip_comments(text):
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def field_ident(name):
    s = snake(name)
    if s in C_KEYWORDS:
        s += "_"
    return s


class Versions:
    """An inclusive version range; lo > hi means empty."""

    def __init__(self, spec):
        spec = str(spec).strip()
        if spec == "none" or spec == "":
            self.lo, self.hi = 1, 0
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), MAXV
        elif "-" in spec:
            a, b = spec.split("-")
            self.lo, self.hi = int(a), int(b)
        else:
            self.lo = self.hi = int(spec)

    def empty(self):
        return self.lo > self.hi

    def intersect(self, other):
        v = Versions("none")
        v.lo, v.hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return v

    def cond(self, var="v"):
        """A C expression true when var is in the range ("1" if always)."""
        if self.empty():
            return "0"
        parts = []
        if self.lo > 0:
            parts.append(f"{var} >= {self.lo}")
        if self.hi < MAXV:
            parts.append(f"{var} <= {self.hi}")
        return " && ".join(parts) if parts else "1"

    def contains(self, v):
        return self.lo <= v <= self.hi


class Field:
    def __init__(self, spec, struct_prefix, msg):
        self.name = spec["name"]
        self.ident = field_ident(self.name)
        self.type = spec["type"]
        vs = spec.get("versions") or spec.get("taggedVersions") or "0+"
        self.versions = Versions(vs)
        self.nullable = Versions(spec.get("nullableVersions", "none"))
        self.tagged = Versions(spec.get("taggedVersions", "none"))
        self.tag = int(spec["tag"]) if "tag" in spec else None
        self.default = spec.get("default")
        self.flex_override = spec.get("flexibleVersions")
        self.is_array = self.type.startswith("[]")
        self.elem = self.type[2:] if self.is_array else self.type
        self.is_struct = self.elem not in PRIMS
        self.struct = None
        if self.is_struct:
            if "fields" in spec:
                self.struct = Struct(self.elem, spec["fields"], struct_prefix, msg)
                msg.add_struct(self.struct)
            else:
                msg.pending.append(self)

    def c_elem_type(self):
        if self.is_struct:
            return self.struct.ctype
        return PRIMS[self.elem]

    def default_is_null(self):
        return self.default is not None and str(self.default) == "null"

    def default_expr(self):
        """C expression for the default of a scalar field."""
        t = self.elem
        d = self.default
        if t == "bool":
            return "true" if str(d).lower() == "true" else "false"
        if t in INTS:
            if d is None or d == "":
                return "0"
            val = int(str(d), 0)
            if t == "int64":
                return f"INT64_C({val})"
            if t == "int32" and val == -2147483648:
                return "INT32_MIN"
            return str(val)
        if t == "float64":
            return str(float(d)) if d not in (None, "") else "0.0"
        if t == "string":
            if self.default_is_null():
                return "KSTR_NULL"
            s = "" if d is None else str(d)
            return 'KSTR_LIT("%s")' % s.replace("\\", "\\\\").replace('"', '\\"')
        if t == "bytes":
            return "KBYTES_NULL" if self.default_is_null() else "((kbytes_t){NULL, 0})"
        if t == "records":
            return "KRECORDS_NULL" if self.default_is_null() else "((krecords_t){NULL, 0, NULL, 0})"
        if t == "uuid":
            return "((kuuid_t){{0}})"
        raise ValueError(t)


class Struct:
    def __init__(self, name, fields, prefix, msg):
        self.name = name
        self.prefix = prefix
        self.cname = f"{prefix}_{snake(name)}" if prefix else snake(name)
        self.ctype = self.cname + "_t"
        self.fields = [Field(f, prefix, msg) for f in fields]
        self.used_as_tagged = False

    def tagged_fields(self):
        return sorted([f for f in self.fields if not f.tagged.empty()], key=lambda f: f.tag)


class Message:
    def __init__(self, spec, path):
        self.spec = spec
        self.path = path
        self.name = spec["name"]
        self.kind = spec["type"]
        self.api_key = spec.get("apiKey")
        self.valid = Versions(spec["validVersions"])
        self.flexible = Versions(spec.get("flexibleVersions", "none"))
        self.cname = snake(self.name)
        self.structs = []          # nested structs, dependency ordered
        self.struct_by_name = {}
        self.pending = []
        self.common = {}
        for cs in spec.get("commonStructs", []):
            self.common[cs["name"]] = cs
        self.root = Struct(self.name, spec["fields"], None, self)
        self.root.cname = self.cname
        self.root.ctype = self.cname + "_t"
        # Resolve references to common structs (possibly nested in each other).
        while self.pending:
            f = self.pending.pop(0)
            if f.elem in self.struct_by_name:
                f.struct = self.struct_by_name[f.elem]
            elif f.elem in self.common:
                s = Struct(f.elem, self.common[f.elem]["fields"], self.cname, self)
                self.add_struct(s)
                f.struct = s
            else:
                raise ValueError(f"{path}: unknown struct type {f.elem}")
        self.mark_tagged(self.root)

    def add_struct(self, s):
        s.prefix = self.cname
        s.cname = f"{self.cname}_{snake(s.name)}"
        s.ctype = s.cname + "_t"
        if s.name in self.struct_by_name:
            return
        self.struct_by_name[s.name] = s
        self.structs.append(s)

    def mark_tagged(self, s, seen=None):
        seen = seen or set()
        for f in s.fields:
            if f.is_struct and f.struct and f.struct.name not in seen:
                if not f.tagged.empty() and not f.is_array:
                    f.struct.used_as_tagged = True
                seen.add(f.struct.name)
                self.mark_tagged(f.struct, seen)

    def ordered_structs(self):
        """Nested structs, each after the structs it embeds by value."""
        order, done = [], set()

        def visit(s):
            if s.name in done:
                return
            done.add(s.name)
            for f in s.fields:
                if f.is_struct and f.struct:
                    visit(f.struct)
            order.append(s)

        for s in self.structs:
            visit(s)
        return [s for s in order if s is not self.root]


# ---------------------------------------------------------------- emitters


def present_cond(f):
    """C condition: field f is written in the fixed (untagged) part at v."""
    if f.tagged.empty():
        return f"({f.versions.cond()})" if f.versions.cond() != "1" else "1"
    # tagged in [tlo, thi]; fixed in versions minus that range
    lo, hi = f.versions.lo, f.versions.hi
    if f.tagged.lo <= lo and f.tagged.hi >= hi:
        return "0"
    return f"(({f.versions.cond()}) && !({f.tagged.cond()}))"


class Emitter:
    def __init__(self, msg):
        self.m = msg
        self.h = []
        self.c = []
        self.t = []  # test fill code

    # -- declarations
    def decl_struct(self, s):
        out = self.h
        out.append(f"typedef struct {s.ctype[:-2]}_s {{")
        for f in s.fields:
            et = f.c_elem_type()
            if f.is_array:
                out.append(f"    struct {{ {et} *a; int32_t n; }} {f.ident};")
            elif f.is_struct and not f.nullable.empty():
                out.append(f"    {et} *{f.ident}; /* NULL = null */")
            else:
                out.append(f"    {et} {f.ident};")
        if not s.fields:
            out.append("    char unused_;")
        out.append(f"}} {s.ctype};")
        out.append("")

    def protos(self, s):
        n = s.cname
        self.h.append(f"void {n}_init({s.ctype} *m);")
        self.h.append(f"int {n}_decode(struct kreader *r, int16_t v, {s.ctype} *m);")
        self.h.append(f"void {n}_encode(struct kwriter *w, int16_t v, const {s.ctype} *m);")
        self.h.append(f"/* n elements from arena ar, each set to its defaults. */")
        self.h.append(f"{s.ctype} *{n}_new_array(struct arena *ar, int32_t n);")
        if s.used_as_tagged:
            self.h.append(f"bool {n}_is_default(const {s.ctype} *m);")
        self.h.append("")

    def flex_expr(self, f=None):
        if f is not None and f.flex_override is not None:
            return "false"
        return f"({self.m.flexible.cond()})" if not self.m.flexible.empty() else "false"

    # -- init
    def gen_init(self, s):
        c = self.c
        c.append(f"void {s.cname}_init({s.ctype} *m)")
        c.append("{")
        c.append("    memset(m, 0, sizeof *m);")
        for f in s.fields:
            if f.is_array:
                if f.default_is_null():
                    c.append(f"    m->{f.ident}.n = -1;")
            elif f.is_struct:
                if f.nullable.empty():
                    c.append(f"    {f.struct.cname}_init(&m->{f.ident});")
            else:
                d = f.default_expr()
                if d not in ("0", "false", "((kuuid_t){{0}})", "0.0"):
                    c.append(f"    m->{f.ident} = {d};")
        c.append("}")
        c.append("")
        c.append(f"{s.ctype} *{s.cname}_new_array(struct arena *ar, int32_t n)")
        c.append("{")
        c.append(f"    {s.ctype} *a = arena_alloc(ar, (size_t)(n > 0 ? n : 0) * sizeof *a);")
        c.append(f"    for (int32_t i = 0; i < n; i++)")
        c.append(f"        {s.cname}_init(&a[i]);")
        c.append("    return a;")
        c.append("}")
        c.append("")
        if s.used_as_tagged:
            c.append(f"bool {s.cname}_is_default(const {s.ctype} *m)")
            c.append("{")
            c.append(f"    {s.ctype} d;")
            c.append(f"    {s.cname}_init(&d);")
            for f in s.fields:
                c.append(f"    if ({self.nondefault_expr(f, 'm->' + f.ident, '&d.' + f.ident)})")
                c.append("        return false;")
            c.append("    return true;")
            c.append("}")
            c.append("")

    def nondefault_expr(self, f, val, dflt_addr=None):
        """C expression: the field's value differs from its default."""
        t = f.elem
        if f.is_array:
            if f.default_is_null():
                return f"{val}.n >= 0"
            return f"{val}.n != 0"
        if f.is_struct:
            if not f.nullable.empty():
                return f"{val} != NULL"
            return f"!{f.struct.cname}_is_default(&{val})"
        d = f.default_expr()
        if t in INTS or t == "bool" or t == "float64":
            return f"{val} != {d}"
        if t == "string":
            return f"!kstr_eq({val}, {d})"
        if t in ("bytes", "records"):
            if f.default_is_null():
                return f"{val}.len >= 0"
            return f"{val}.len != 0"
        if t == "uuid":
            return f"!kuuid_is_zero(&{val})"
        raise ValueError(t)

    # -- decode
    def read_prim(self, t, compact):
        return {
            "bool": "kr_bool(r)", "int8": "kr_i8(r)", "int16": "kr_i16(r)",
            "uint16": "kr_u16(r)", "int32": "kr_i32(r)", "uint32": "kr_u32(r)",
            "int64": "kr_i64(r)", "float64": "kr_f64(r)", "uuid": "kr_uuid(r)",
            "string": f"kr_string(r, {compact})", "bytes": f"kr_bytes(r, {compact})",
            "records": f"kr_records(r, {compact})",
        }[t]

    def decode_field(self, f, out, ind, compact):
        """Emit code reading field f into out (an lvalue)."""
        c = self.c
        nullable = f.nullable.cond()
        if f.is_array:
            c.append(f"{ind}{{")
            c.append(f"{ind}    int32_t n_ = kr_array_len(r, {compact});")
            c.append(f"{ind}    if (r->err) return -1;")
            c.append(f"{ind}    if (n_ < 0 && !({nullable})) {{ kr_fail(r); return -1; }}")
            if f.is_struct:
                c.append(f"{ind}    {out}.a = arena_alloc(r->arena, (size_t)(n_ > 0 ? n_ : 0) * sizeof *{out}.a);")
            else:
                c.append(f"{ind}    {out}.a = arena_alloc(r->arena, (size_t)(n_ > 0 ? n_ : 0) * sizeof *{out}.a);")
            c.append(f"{ind}    {out}.n = n_;")
            c.append(f"{ind}    for (int32_t i_ = 0; i_ < n_; i_++) {{")
            if f.is_struct:
                c.append(f"{ind}        if ({f.struct.cname}_decode(r, v, &{out}.a[i_]) < 0) return -1;")
            else:
                c.append(f"{ind}        {out}.a[i_] = {self.read_prim(f.elem, compact)};")
                if f.elem == "string":
                    c.append(f"{ind}        if ({out}.a[i_].len < 0) {{ kr_fail(r); return -1; }}")
            c.append(f"{ind}        if (r->err) return -1;")
            c.append(f"{ind}    }}")
            c.append(f"{ind}}}")
        elif f.is_struct:
            if not f.nullable.empty():
                c.append(f"{ind}if (({nullable}) && kr_i8(r) < 0) {{")
                c.append(f"{ind}    {out} = NULL;")
                c.append(f"{ind}}} else {{")
                c.append(f"{ind}    {out} = arena_alloc(r->arena, sizeof *{out});")
                c.append(f"{ind}    {f.struct.cname}_init({out});")
                c.append(f"{ind}    if ({f.struct.cname}_decode(r, v, {out}) < 0) return -1;")
                c.append(f"{ind}}}")
            else:
                c.append(f"{ind}if ({f.struct.cname}_decode(r, v, &{out}) < 0) return -1;")
        else:
            c.append(f"{ind}{out} = {self.read_prim(f.elem, compact)};")
            if f.elem in ("string", "bytes", "records"):
                c.append(f"{ind}if ({out}.len < 0 && !({nullable})) {{ kr_fail(r); return -1; }}")

    def gen_decode(self, s):
        c = self.c
        c.append(f"int {s.cname}_decode(struct kreader *r, int16_t v, {s.ctype} *m)")
        c.append("{")
        c.append("    (void)v;")
        c.append(f"    {s.cname}_init(m);")
        flex = self.flex_expr()
        c.append(f"    bool flex = {flex};")
        c.append("    (void)flex;")
        for f in s.fields:
            if f.versions.empty():
                continue
            cond = present_cond(f)
            if cond == "0":
                continue
            compact = "false" if f.flex_override is not None else "flex"
            c.append(f"    if ({cond}) {{")
            self.decode_field(f, "m->" + f.ident, "        ", compact)
            c.append("    }")
        if not self.m.flexible.empty():
            tagged = s.tagged_fields()
            c.append("    if (flex) {")
            c.append("        uint32_t ntags = kr_uvarint(r);")
            c.append("        for (uint32_t t_ = 0; t_ < ntags && !r->err; t_++) {")
            c.append("            uint32_t tag = kr_uvarint(r);")
            c.append("            uint32_t size = kr_uvarint(r);")
            c.append("            if (r->err || size > kr_left(r)) { kr_fail(r); return -1; }")
            if not tagged:
                c.append("            (void)tag;")
                c.append("            r->p += size; /* no known tags here: skip */")
                c.append("        }")
                c.append("    }")
                c.append("    return r->err ? -1 : 0;")
                c.append("}")
                c.append("")
                return
            c.append("            struct kreader sub = *r;")
            c.append("            sub.end = r->p + size;")
            c.append("            r->p += size;")
            c.append("            switch (tag) {")
            for f in tagged:
                c.append(f"            case {f.tag}:")
                c.append(f"                if ({f.tagged.cond()}) {{")
                c.append("                    struct kreader *outer_ = r;")
                c.append("                    r = &sub;")
                self.decode_field(f, "m->" + f.ident, "                    ", "true")
                c.append("                    r = outer_;")
                c.append("                    if (sub.err) { kr_fail(r); return -1; }")
                c.append("                }")
                c.append("                break;")
            c.append("            default:")
            c.append("                break; /* unknown tags are skipped */")
            c.append("            }")
            c.append("        }")
            c.append("    }")
        c.append("    return r->err ? -1 : 0;")
        c.append("}")
        c.append("")

    # -- encode
    def write_prim(self, t, val, compact):
        return {
            "bool": f"kw_bool(w, {val})", "int8": f"kw_i8(w, {val})", "int16": f"kw_i16(w, {val})",
            "uint16": f"kw_u16(w, {val})", "int32": f"kw_i32(w, {val})", "uint32": f"kw_u32(w, {val})",
            "int64": f"kw_i64(w, {val})", "float64": f"kw_f64(w, {val})", "uuid": f"kw_uuid(w, &{val})",
            "string": f"kw_string(w, {val}, {compact})", "bytes": f"kw_bytes(w, {val}, {compact})",
            "records": f"kw_records(w, &{val}, {compact})",
        }[t]

    def encode_field(self, f, val, ind, compact):
        c = self.c
        nullable = f.nullable.cond()
        if f.is_array:
            c.append(f"{ind}{{")
            c.append(f"{ind}    int32_t n_ = {val}.n;")
            c.append(f"{ind}    if (n_ < 0 && !({nullable})) n_ = 0;")
            c.append(f"{ind}    kw_array_len(w, n_, {compact});")
            c.append(f"{ind}    for (int32_t i_ = 0; i_ < n_; i_++)")
            if f.is_struct:
                c.append(f"{ind}        {f.struct.cname}_encode(w, v, &{val}.a[i_]);")
            else:
                c.append(f"{ind}        {self.write_prim(f.elem, val + '.a[i_]', compact)};")
            c.append(f"{ind}}}")
        elif f.is_struct:
            if not f.nullable.empty():
                c.append(f"{ind}if ({val} == NULL) {{")
                c.append(f"{ind}    if ({nullable}) {{")
                c.append(f"{ind}        kw_i8(w, -1);")
                c.append(f"{ind}    }} else {{")
                c.append(f"{ind}        {f.struct.ctype} d_;")
                c.append(f"{ind}        {f.struct.cname}_init(&d_);")
                c.append(f"{ind}        {f.struct.cname}_encode(w, v, &d_);")
                c.append(f"{ind}    }}")
                c.append(f"{ind}}} else {{")
                c.append(f"{ind}    if ({nullable}) kw_i8(w, 1);")
                c.append(f"{ind}    {f.struct.cname}_encode(w, v, {val});")
                c.append(f"{ind}}}")
            else:
                c.append(f"{ind}{f.struct.cname}_encode(w, v, &{val});")
        else:
            if f.elem in ("string", "bytes", "records") and not f.nullable.empty():
                # null in a version where the field is not nullable: send empty
                c.append(f"{ind}if ({val}.len < 0 && !({nullable})) {{")
                empty = {"string": 'KSTR_LIT("")', "bytes": "((kbytes_t){NULL, 0})",
                         "records": "((krecords_t){NULL, 0, NULL, 0})"}[f.elem]
                c.append(f"{ind}    {f.c_elem_type()} e_ = {empty};")
                c.append(f"{ind}    {self.write_prim(f.elem, 'e_', compact)};")
                c.append(f"{ind}}} else {{")
                c.append(f"{ind}    {self.write_prim(f.elem, val, compact)};")
                c.append(f"{ind}}}")
            elif f.elem in ("string", "bytes", "records"):
                c.append(f"{ind}if ({val}.len < 0) {{")
                empty = {"string": 'KSTR_LIT("")', "bytes": "((kbytes_t){NULL, 0})",
                         "records": "((krecords_t){NULL, 0, NULL, 0})"}[f.elem]
                c.append(f"{ind}    {f.c_elem_type()} e_ = {empty};")
                c.append(f"{ind}    {self.write_prim(f.elem, 'e_', compact)};")
                c.append(f"{ind}}} else {{")
                c.append(f"{ind}    {self.write_prim(f.elem, val, compact)};")
                c.append(f"{ind}}}")
            else:
                c.append(f"{ind}{self.write_prim(f.elem, val, compact)};")

    def gen_encode(self, s):
        c = self.c
        c.append(f"void {s.cname}_encode(struct kwriter *w, int16_t v, const {s.ctype} *m)")
        c.append("{")
        c.append("    (void)v;")
        c.append("    (void)m;")
        c.append(f"    bool flex = {self.flex_expr()};")
        c.append("    (void)flex;")
        for f in s.fields:
            if f.versions.empty():
                continue
            cond = present_cond(f)
            if cond == "0":
                continue
            compact = "false" if f.flex_override is not None else "flex"
            c.append(f"    if ({cond}) {{")
            self.encode_field(f, "m->" + f.ident, "        ", compact)
            c.append("    }")
        if not self.m.flexible.empty():
            tagged = s.tagged_fields()
            c.append("    if (flex) {")
            if not tagged:
                c.append("        kw_uvarint(w, 0);")
            else:
                c.append("        uint32_t ntags = 0;")
                for f in tagged:
                    c.append(f"        if (({f.tagged.cond()}) && ({self.nondefault_expr(f, 'm->' + f.ident)}))")
                    c.append("            ntags++;")
                c.append("        kw_uvarint(w, ntags);")
                for f in tagged:
                    c.append(f"        if (({f.tagged.cond()}) && ({self.nondefault_expr(f, 'm->' + f.ident)})) {{")
                    c.append("            struct kwriter *outer_ = w;")
                    c.append("            struct kwriter sub;")
                    c.append("            kw_init(&sub);")
                    c.append("            w = &sub;")
                    self.encode_field(f, "m->" + f.ident, "            ", "true")
                    c.append("            w = outer_;")
                    c.append(f"            kw_uvarint(w, {f.tag});")
                    c.append("            kw_uvarint(w, (uint32_t)sub.b.len);")
                    c.append("            kw_raw(w, sub.b.data, sub.b.len);")
                    c.append("            kw_free(&sub);")
                    c.append("        }")
            c.append("    }")
        c.append("}")
        c.append("")

    # -- test fill
    def fill_prim(self, t, out, ind, compact_hint):
        T = self.t
        if t == "bool":
            T.append(f"{ind}{out} = gen_rand(rng) & 1;")
        elif t in INTS:
            ct = PRIMS[t]
            T.append(f"{ind}{out} = ({ct})gen_rand(rng);")
        elif t == "float64":
            T.append(f"{ind}{out} = (double)(int32_t)gen_rand(rng) / 7.0;")
        elif t == "uuid":
            T.append(f"{ind}gen_fill_bytes(rng, {out}.b, 16);")
        elif t == "string":
            T.append(f"{ind}{out} = gen_rand_str(ar, rng);")
        elif t == "bytes":
            T.append(f"{ind}{out} = gen_rand_bytes(ar, rng);")
        elif t == "records":
            T.append(f"{ind}{{ kbytes_t b_ = gen_rand_bytes(ar, rng); {out} = (krecords_t){{b_.p, b_.len, NULL, 0}}; }}")

    def gen_fill(self, s):
        T = self.t
        T.append(f"void {s.cname}_fill({s.ctype} *m, int16_t v, struct arena *ar, uint64_t *rng, int depth)")
        T.append("{")
        T.append("    (void)v; (void)ar; (void)rng; (void)depth;")
        T.append(f"    {s.cname}_init(m);")
        for f in s.fields:
            if f.versions.empty():
                continue
            T.append(f"    if ({f.versions.cond()}) {{")
            nullable = f.nullable.cond()
            ind = "        "
            if not f.tagged.empty():
                # tagged fields stay at their defaults half the time
                T.append(f"{ind}if (gen_rand(rng) & 1) {{")
                ind += "    "
            if f.is_array:
                T.append(f"{ind}if (({nullable}) && gen_rand(rng) % 5 == 0) {{")
                T.append(f"{ind}    m->{f.ident}.n = -1;")
                T.append(f"{ind}}} else {{")
                T.append(f"{ind}    int32_t n_ = depth > 3 ? 0 : (int32_t)(gen_rand(rng) % 4);")
                T.append(f"{ind}    m->{f.ident}.a = arena_alloc(ar, (size_t)n_ * sizeof *m->{f.ident}.a + 1);")
                T.append(f"{ind}    m->{f.ident}.n = n_;")
                T.append(f"{ind}    for (int32_t i_ = 0; i_ < n_; i_++) {{")
                if f.is_struct:
                    T.append(f"{ind}        {f.struct.cname}_fill(&m->{f.ident}.a[i_], v, ar, rng, depth + 1);")
                else:
                    self.fill_prim(f.elem, f"m->{f.ident}.a[i_]", ind + "        ", None)
                T.append(f"{ind}    }}")
                T.append(f"{ind}}}")
            elif f.is_struct:
                if not f.nullable.empty():
                    T.append(f"{ind}if (({nullable}) && gen_rand(rng) % 3 == 0) {{")
                    T.append(f"{ind}    m->{f.ident} = NULL;")
                    T.append(f"{ind}}} else {{")
                    T.append(f"{ind}    m->{f.ident} = arena_alloc(ar, sizeof *m->{f.ident});")
                    T.append(f"{ind}    {f.struct.cname}_fill(m->{f.ident}, v, ar, rng, depth + 1);")
                    T.append(f"{ind}}}")
                else:
                    T.append(f"{ind}{f.struct.cname}_fill(&m->{f.ident}, v, ar, rng, depth + 1);")
            else:
                if f.elem in ("string", "bytes", "records"):
                    T.append(f"{ind}if (({nullable}) && gen_rand(rng) % 4 == 0) {{")
                    null = {"string": "KSTR_NULL", "bytes": "KBYTES_NULL", "records": "KRECORDS_NULL"}[f.elem]
                    T.append(f"{ind}    m->{f.ident} = {null};")
                    T.append(f"{ind}}} else {{")
                    self.fill_prim(f.elem, f"m->{f.ident}", ind + "    ", None)
                    T.append(f"{ind}}}")
                else:
                    self.fill_prim(f.elem, f"m->{f.ident}", ind, None)
            if not f.tagged.empty():
                T.append("        }")
            T.append("    }")
        T.append("}")
        T.append("")

    def run(self):
        m = self.m
        guard = f"SAMSA_PROTO_GEN_{m.cname.upper()}_H"
        src = os.path.relpath(m.path, start=os.path.dirname(os.path.dirname(m.path)))
        self.h += [
            f"/* Generated by tools/protogen from Kafka's {src}. Do not edit. */",
            f"#ifndef {guard}", f"#define {guard}", "",
            "#include \"proto/kcodec.h\"", "",
        ]
        if m.api_key is not None:
            self.h.append(f"#define {m.cname.upper()}_API_KEY {m.api_key}")
        self.h.append(f"#define {m.cname.upper()}_MIN_VERSION {m.valid.lo}")
        self.h.append(f"#define {m.cname.upper()}_MAX_VERSION {m.valid.hi}")
        self.h.append("")
        structs = m.ordered_structs()
        for s in structs:
            self.decl_struct(s)
        self.decl_struct(m.root)
        for s in structs + [m.root]:
            self.protos(s)
        self.h.append(f"#endif")
        self.h.append("")

        self.c += [
            f"/* Generated by tools/protogen from Kafka's {src}. Do not edit. */",
            f"#include \"proto/gen/{m.cname}.h\"", "",
            "#include <string.h>", "",
        ]
        for s in structs + [m.root]:
            self.gen_init(s)
            self.gen_decode(s)
            self.gen_encode(s)
        self.t.append(f"/* {m.name} */")
        for s in structs + [m.root]:
            self.t.append(f"void {s.cname}_fill({s.ctype} *m, int16_t v, struct arena *ar, uint64_t *rng, int depth);")
        for s in structs + [m.root]:
            self.gen_fill(s)
        return "\n".join(self.h), "\n".join(self.c), "\n".join(self.t)


def api_name(msg_name):
    for suf in ("Request", "Response"):
        if msg_name.endswith(suf):
            return msg_name[: -len(suf)]
    return msg_name


def write_if_changed(path, text):
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spec_dirs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--test-out", required=True)
    args = ap.parse_args()

    msgs = []
    for d in args.spec_dirs:
        for fn in sorted(os.listdir(d)):
            if not fn.endswith(".json"):
                continue
            path = os.path.join(d, fn)
            spec = json.loads(strip_comments(open(path).read()))
            msgs.append(Message(spec, path))

    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.test_out, exist_ok=True)
    fills = []
    sources = []
    for m in msgs:
        h, c, t = Emitter(m).run()
        write_if_changed(os.path.join(args.out, m.cname + ".h"), h)
        write_if_changed(os.path.join(args.out, m.cname + ".c"), c)
        sources.append(m.cname)
        fills.append(t)

    # API table
    reqs = {m.api_key: m for m in msgs if m.kind == "request"}
    resps = {m.api_key: m for m in msgs if m.kind == "response"}
    keys = sorted(reqs)
    h = ["/* Generated by tools/protogen. Do not edit. */",
         "#ifndef SAMSA_PROTO_GEN_KAPI_H", "#define SAMSA_PROTO_GEN_KAPI_H", "",
         "#include \"proto/kcodec.h\"", ""]
    for m in msgs:
        h.append(f"#include \"proto/gen/{m.cname}.h\"")
    h += ["",
          "/* One row per API key: versions, flexible thresholds and type-erased",
          " * codecs for both directions. */",
          "struct kapi {",
          "    int16_t key;",
          "    const char *name;          /* Kafka's name, e.g. \"Fetch\" */",
          "    int16_t min_version, max_version;",
          "    int16_t flex_min;          /* first flexible version; 0x7fff if none */",
          "    size_t req_size, resp_size;",
          "    void (*req_init)(void *m);",
          "    int (*req_decode)(struct kreader *r, int16_t v, void *m);",
          "    void (*req_encode)(struct kwriter *w, int16_t v, const void *m);",
          "    void (*resp_init)(void *m);",
          "    int (*resp_decode)(struct kreader *r, int16_t v, void *m);",
          "    void (*resp_encode)(struct kwriter *w, int16_t v, const void *m);",
          "    /* the response's top-level ThrottleTimeMs (int32): its offset in",
          "     * the response struct, -1 if none; and the first version with it */",
          "    long resp_throttle_off;",
          "    int16_t resp_throttle_min;",
          "};", "",
          "enum kapi_key {"]
    for k in keys:
        h.append(f"    KAPI_{snake(api_name(reqs[k].name)).upper()} = {k},")
    h += ["};", "",
          f"#define KAPI_MAX_KEY {max(keys)}",
          "/* NULL for a key Kafka does not define. */",
          "const struct kapi *kapi_get(int16_t key);",
          "extern const struct kapi kapi_table[];",
          "extern const int kapi_table_len;",
          "/* Request header version for (key, version): 2 when flexible, else 1. */",
          "int kapi_request_header_version(const struct kapi *a, int16_t v);",
          "/* Response header version: 1 when flexible, else 0; ApiVersions is always 0. */",
          "int kapi_response_header_version(const struct kapi *a, int16_t v);",
          "", "#endif", ""]
    write_if_changed(os.path.join(args.out, "kapi.h"), "\n".join(h))

    c = ["/* Generated by tools/protogen. Do not edit. */", "#include \"proto/gen/kapi.h\"", "",
         "#include <stddef.h>", ""]
    for k in keys:
        for m in (reqs[k], resps[k]):
            n = m.cname
            c.append(f"static void {n}_init_v(void *m) {{ {n}_init(m); }}")
            c.append(f"static int {n}_decode_v(struct kreader *r, int16_t v, void *m) {{ return {n}_decode(r, v, m); }}")
            c.append(f"static void {n}_encode_v(struct kwriter *w, int16_t v, const void *m) {{ {n}_encode(w, v, m); }}")
    c.append("")
    c.append("const struct kapi kapi_table[] = {")
    for k in keys:
        q, p = reqs[k], resps[k]
        assert q.valid.lo == p.valid.lo and q.valid.hi == p.valid.hi, q.name
        fl = q.flexible.lo if not q.flexible.empty() else MAXV
        th = [f for f in p.root.fields if f.name == "ThrottleTimeMs" and f.elem == "int32" and f.tagged.empty()]
        toff = f"(long)offsetof({p.cname}_t, {th[0].ident})" if th else "-1"
        tmin = th[0].versions.lo if th else MAXV
        c.append(f"    {{{k}, \"{api_name(q.name)}\", {q.valid.lo}, {q.valid.hi}, {fl}, "
                 f"sizeof({q.cname}_t), sizeof({p.cname}_t), "
                 f"{q.cname}_init_v, {q.cname}_decode_v, {q.cname}_encode_v, "
                 f"{p.cname}_init_v, {p.cname}_decode_v, {p.cname}_encode_v, {toff}, {tmin}}},")
    c.append("};")
    c.append(f"const int kapi_table_len = {len(keys)};")
    c.append("")
    c.append("const struct kapi *kapi_get(int16_t key)")
    c.append("{")
    c.append("    static const struct kapi *index[KAPI_MAX_KEY + 1];")
    c.append("    static int built;")
    c.append("    if (key < 0 || key > KAPI_MAX_KEY)")
    c.append("        return NULL;")
    c.append("    if (!__atomic_load_n(&built, __ATOMIC_ACQUIRE)) {")
    c.append("        for (int i = 0; i < kapi_table_len; i++)")
    c.append("            index[kapi_table[i].key] = &kapi_table[i];")
    c.append("        __atomic_store_n(&built, 1, __ATOMIC_RELEASE);")
    c.append("    }")
    c.append("    return index[key];")
    c.append("}")
    c.append("")
    c.append("int kapi_request_header_version(const struct kapi *a, int16_t v)")
    c.append("{")
    c.append("    if (v >= a->flex_min)")
    c.append("        return 2;")
    c.append("    /* ControlledShutdown v0 predates the client id. */")
    c.append("    if (a->key == 7 && v == 0)")
    c.append("        return 0;")
    c.append("    return 1;")
    c.append("}")
    c.append("")
    c.append("int kapi_response_header_version(const struct kapi *a, int16_t v)")
    c.append("{")
    c.append("    /* ApiVersions answers with header v0 so that a client can always")
    c.append("     * parse it, whatever version it asked for (KIP-511). */")
    c.append("    if (a->key == 18)")
    c.append("        return 0;")
    c.append("    return v >= a->flex_min ? 1 : 0;")
    c.append("}")
    c.append("")
    write_if_changed(os.path.join(args.out, "kapi.c"), "\n".join(c))

    # Metadata record table
    metas = sorted([m for m in msgs if m.kind == "metadata"], key=lambda m: m.api_key)
    h = ["/* Generated by tools/protogen. Do not edit. */",
         "#ifndef SAMSA_PROTO_GEN_KMETA_H", "#define SAMSA_PROTO_GEN_KMETA_H", "",
         "#include \"proto/gen/kapi.h\"", "",
         "/* KRaft metadata record types (the apiKey of each record). */",
         "enum kmeta_type {"]
    for m in metas:
        h.append(f"    KMETA_{snake(m.name).upper()} = {m.api_key},")
    h += ["};", "",
          "struct kmeta {",
          "    int16_t type;",
          "    const char *name;",
          "    int16_t min_version, max_version;",
          "    size_t size;",
          "    void (*init)(void *m);",
          "    int (*decode)(struct kreader *r, int16_t v, void *m);",
          "    void (*encode)(struct kwriter *w, int16_t v, const void *m);",
          "};", "",
          "/* NULL for an unknown record type. */",
          "const struct kmeta *kmeta_get(int16_t type);",
          "extern const struct kmeta kmeta_table[];",
          "extern const int kmeta_table_len;",
          "", "#endif", ""]
    write_if_changed(os.path.join(args.out, "kmeta.h"), "\n".join(h))
    c = ["/* Generated by tools/protogen. Do not edit. */", "#include \"proto/gen/kmeta.h\"", ""]
    for m in metas:
        n = m.cname
        c.append(f"static void {n}_init_v(void *m) {{ {n}_init(m); }}")
        c.append(f"static int {n}_decode_v(struct kreader *r, int16_t v, void *m) {{ return {n}_decode(r, v, m); }}")
        c.append(f"static void {n}_encode_v(struct kwriter *w, int16_t v, const void *m) {{ {n}_encode(w, v, m); }}")
    c.append("")
    c.append("const struct kmeta kmeta_table[] = {")
    for m in metas:
        c.append(f"    {{{m.api_key}, \"{m.name}\", {m.valid.lo}, {m.valid.hi}, sizeof({m.cname}_t), "
                 f"{m.cname}_init_v, {m.cname}_decode_v, {m.cname}_encode_v}},")
    c.append("};")
    c.append(f"const int kmeta_table_len = {len(metas)};")
    c.append("")
    c.append("const struct kmeta *kmeta_get(int16_t type)")
    c.append("{")
    c.append("    for (int i = 0; i < kmeta_table_len; i++)")
    c.append("        if (kmeta_table[i].type == type)")
    c.append("            return &kmeta_table[i];")
    c.append("    return NULL;")
    c.append("}")
    c.append("")
    write_if_changed(os.path.join(args.out, "kmeta.c"), "\n".join(c))

    # Automake fragment
    mk = ["# Generated by tools/protogen. Do not edit.", "core_libsamsacore_a_SOURCES += \\"]
    names = sources + ["kapi", "kmeta"]
    for i, n in enumerate(names):
        end = " \\" if i < len(names) - 1 else ""
        mk.append(f"\tcore/proto/gen/{n}.c core/proto/gen/{n}.h{end}")
    mk.append("")
    write_if_changed(os.path.join(args.out, "gen.mk"), "\n".join(mk))

    # Test fill routines and the table the round-trip test walks.
    t = ["/* Generated by tools/protogen. Do not edit. */",
         "#include \"gen_fill.h\"", ""]
    t += fills
    # Thunks keep every call through a function pointer type-correct.
    for m in msgs:
        n = m.cname
        t.append(f"static void {n}_fill_v(void *m, int16_t v, struct arena *ar, uint64_t *rng, int depth) "
                 f"{{ {n}_fill(m, v, ar, rng, depth); }}")
        if m.kind not in ("request", "response"):
            t.append(f"static int {n}_decode_v(struct kreader *r, int16_t v, void *m) {{ return {n}_decode(r, v, m); }}")
            t.append(f"static void {n}_encode_v(struct kwriter *w, int16_t v, const void *m) {{ {n}_encode(w, v, m); }}")
    t.append("")
    t.append("const struct gen_fill_api gen_fill_apis[] = {")
    for k in keys:
        t.append(f"    {{{k}, {reqs[k].cname}_fill_v, {resps[k].cname}_fill_v}},")
    t.append("};")
    t.append(f"const int gen_fill_apis_len = {len(keys)};")
    t.append("")
    t.append("const struct gen_fill_other gen_fill_others[] = {")
    for m in msgs:
        if m.kind in ("request", "response"):
            continue
        t.append(f"    {{\"{m.name}\", {m.valid.lo}, {m.valid.hi}, sizeof({m.cname}_t), "
                 f"{m.cname}_fill_v, {m.cname}_decode_v, {m.cname}_encode_v}},")
    t.append("};")
    t.append(f"const int gen_fill_others_len = {sum(1 for m in msgs if m.kind not in ('request', 'response'))};")
    t.append("")
    write_if_changed(os.path.join(args.test_out, "gen_fill.c"), "\n".join(t))
    hh = ["/* Generated by tools/protogen. Do not edit. */",
          "#ifndef SAMSA_TEST_GEN_FILL_H", "#define SAMSA_TEST_GEN_FILL_H", "",
          "#include \"proto/gen/kapi.h\"", "#include \"proto/gen/kmeta.h\"", "",
          "uint64_t gen_rand(uint64_t *rng);",
          "void gen_fill_bytes(uint64_t *rng, uint8_t *p, size_t n);",
          "kstr_t gen_rand_str(struct arena *ar, uint64_t *rng);",
          "kbytes_t gen_rand_bytes(struct arena *ar, uint64_t *rng);",
          "typedef void (*gen_fill_fn)(void *m, int16_t v, struct arena *ar, uint64_t *rng, int depth);",
          "typedef int (*gen_decode_fn)(struct kreader *r, int16_t v, void *m);",
          "typedef void (*gen_encode_fn)(struct kwriter *w, int16_t v, const void *m);",
          "struct gen_fill_api { int16_t key; gen_fill_fn req_fill, resp_fill; };",
          "extern const struct gen_fill_api gen_fill_apis[];",
          "extern const int gen_fill_apis_len;",
          "struct gen_fill_other { const char *name; int16_t min_version, max_version; size_t size;",
          "    gen_fill_fn fill; gen_decode_fn decode; gen_encode_fn encode; };",
          "extern const struct gen_fill_other gen_fill_others[];",
          "extern const int gen_fill_others_len;",
          "", "#endif", ""]
    write_if_changed(os.path.join(args.test_out, "gen_fill.h"), "\n".join(hh))
    print(f"protogen: {len(msgs)} specs, {len(keys)} APIs, {len(metas)} metadata records", file=sys.stderr)


if __name__ == "__main__":
    main()
