#!/usr/bin/env python3
"""Prints the names of Kafka's documented broker configs (the ConfigDefs
AbstractKafkaConfig.CONFIG_DEF merges in Kafka 3.9, less defineInternal
ones), one a line, sorted, from a git clone of apache/kafka at a given
revision. Only names are taken: each define()'s first argument, its
String constants resolved through the sources.

usage: tools/kafka_broker_keys.py KAFKA_GIT_DIR REVISION"""
import re
import subprocess
import sys

repo, rev = sys.argv[1], sys.argv[2]
DEFS = [  # class, ConfigDef field or method
    ("RemoteLogManagerConfig", "configDef"), ("ZkConfigs", "CONFIG_DEF"), ("ServerConfigs", "CONFIG_DEF"),
    ("KRaftConfigs", "CONFIG_DEF"), ("SocketServerConfigs", "CONFIG_DEF"), ("ReplicationConfigs", "CONFIG_DEF"),
    ("GroupCoordinatorConfig", "GROUP_COORDINATOR_CONFIG_DEF"), ("GroupCoordinatorConfig", "NEW_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "OFFSET_MANAGEMENT_CONFIG_DEF"), ("GroupCoordinatorConfig", "CONSUMER_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "SHARE_GROUP_CONFIG_DEF"), ("CleanerConfig", "CONFIG_DEF"), ("LogConfig", "SERVER_CONFIG_DEF"),
    ("ShareGroupConfig", "CONFIG_DEF"), ("TransactionLogConfigs", "CONFIG_DEF"),
    ("TransactionStateManagerConfigs", "CONFIG_DEF"), ("QuorumConfig", "CONFIG_DEF"), ("MetricConfigs", "CONFIG_DEF"),
    ("QuotaConfigs", "CONFIG_DEF"), ("BrokerSecurityConfigs", "CONFIG_DEF"), ("DelegationTokenManagerConfigs", "CONFIG_DEF"),
    ("PasswordEncoderConfigs", "CONFIG_DEF")]


def git(*a):
    return subprocess.run(["git", "-C", repo] + list(a), capture_output=True, text=True, check=True).stdout


files = [f for f in git("ls-tree", "-r", "--name-only", rev).splitlines()
         if f.endswith(".java") and "/src/main/" in f]
src = {}


def source(cls):
    if cls not in src:
        paths = [f for f in files if f.endswith("/" + cls + ".java")]
        src[cls] = git("show", "%s:%s" % (rev, paths[0])) if paths else ""
    return src[cls]


def strip_comments(s):
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    return re.sub(r"//[^\n]*", " ", s)


def imports(cls):
    return dict((m.group(2), m.group(1)) for m in re.finditer(r"import\s+(?:static\s+)?[\w.]*?\.(\w+)\.(\w+)\s*;",
                                                               source(cls)))


def const(cls, name, seen=()):
    s = strip_comments(source(cls))
    m = re.search(r"\bString\s+" + name + r"\s*=\s*(.*?);", s, re.S)
    if m:
        return evaluate(cls, m.group(1), seen + ((cls, name),))
    # a static import: the class it comes from
    imp = imports(cls)
    if name in imp:
        return const(imp[name], name, seen)
    # an interface or superclass: try the classes it extends
    for sup in re.findall(r"\b(?:extends|implements)\s+([\w, .]+?)\s*\{", s)[:1]:
        for c in re.split(r"[,\s]+", sup):
            if c and c != cls and source(c):
                v = const(c.split(".")[-1], name, seen)
                if v is not None:
                    return v
    return None


SYN = None


def server_synonym(topic_key):
    """ServerTopicConfigSynonyms.serverSynonym: the first broker synonym."""
    global SYN
    if SYN is None:
        SYN = {}
        s = strip_comments(source("ServerTopicConfigSynonyms"))
        start = s.index("ALL_TOPIC_CONFIG_SYNONYMS =")
        body = s[start:s.index(" TOPIC_CONFIG_SYNONYMS =", start)]
        for m in re.finditer(r"(sameNameWithLogPrefix|sameNameWithLogCleanerPrefix|sameName|singleWithLogPrefix|"
                             r"singleWithLogCleanerPrefix|single|listWithLogPrefix)\(\s*([\w.]+)\s*"
                             r"(?:,\s*(?:new ConfigSynonym\()?\"([^\"]+)\")?", body):
            kind, arg, first = m.groups()
            t = evaluate("ServerTopicConfigSynonyms", arg, ())
            prefix = "log.cleaner." if "Cleaner" in kind else "log." if "Log" in kind else ""
            SYN[t] = prefix + (first if first else t)
    return SYN[topic_key]


def evaluate(cls, expr, seen):
    expr = re.sub(r"ServerTopicConfigSynonyms\.serverSynonym\(\s*([\w.]+)\s*\)",
                  lambda m: '"%s"' % server_synonym(evaluate(cls, m.group(1), seen)), expr)
    out = ""
    for term in re.findall(r'"(?:[^"\\]|\\.)*"|[\w.]+', expr):
        if term.startswith('"'):
            out += bytes(term[1:-1], "utf-8").decode("unicode_escape")
        else:
            parts = term.split(".")
            v = const(parts[-2], parts[-1], seen) if len(parts) > 1 else const(cls, term, seen)
            if v is None:
                raise SystemExit("cannot resolve %s in %s" % (term, cls))
            out += v
    return out


def def_block(cls, field):
    s = strip_comments(source(cls))
    m = re.search(r"\b" + field + r"\b\s*(?:=|\(\)\s*\{)", s)
    if not m:
        raise SystemExit("no %s.%s" % (cls, field))
    depth, i = 0, m.end()
    while i < len(s):
        ch = s[i]
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                break
        elif ch == ";" and depth == 0:
            break
        i += 1
    return s[m.end():i]


names = set()
for cls, field in DEFS:
    block = def_block(cls, field)
    for m in re.finditer(r"\.define\(\s*([\w.]+|\"[^\"]*\")", block):
        a = m.group(1)
        if a.startswith('"'):
            names.add(a[1:-1])
        else:
            p = a.split(".")
            v = const(p[-2], p[-1]) if len(p) > 1 else const(cls, a)
            if v is None:
                raise SystemExit("cannot resolve %s in %s" % (a, cls))
            names.add(v)
for n in sorted(names):
    print(n)
