#!/bin/sh
# Checks of the committed tree that need no build (scripts/test.sh runs it
# first; it takes well under a second):
#   1. no ELF file (a build output: object, program, shared library) is
#      committed: build outputs belong in .gitignore;
#   2. core/'s layers (ARCHITECTURE.md section 3): every #include "..."
#      of a core/ file names a header of its own folder, of a folder its
#      rule below allows, of the public ABI (include/samsa/) or
#      autoconfig.h. Like modules/local.mk's check-module-isolation, which
#      keeps modules on include/samsa/ only;
#   3. ARCHITECTURE.md's layer table says what RULES below says.
# Usage: scripts/check-tree.sh          run both checks (exit 1 on failure)
#        scripts/check-tree.sh --graph  print the include graph between
#                                       core/ folders (edge counts)
set -eu
cd "$(dirname "$0")/.."

# Which core/ folders (or single headers, as core/-relative paths) each
# folder's .c and .h files may include. The top-level files of core/ are
# three roles: main.c (start-up: wires everything), broker.h (struct
# broker, the node's shared state), and config (config.[ch],
# topic_config.[ch]: parsed configuration, read by every layer). A file
# with no rule fails the check: give a new folder its rule here and its
# line in ARCHITECTURE.md section 3 in the same change.
RULES='
util:
proto:      util
config:     util
broker:
plugin:     util proto config
log:        util proto config
raft:       util proto
net:        util proto config
quorum:     util proto config log raft net/kclient.h
controller: util proto config log raft quorum net/kclient.h net/park.h
replica:    util proto config plugin log controller net/kclient.h net/park.h
coord:      util proto config plugin log controller replica net/kclient.h net/park.h
auth:       util proto config plugin net controller
api:        util proto config plugin log raft net quorum controller replica coord auth broker
main:       *
'

# Known layer violations, "file include  why", one a line: none left
# (issue 8, "Layer knots": the layers below api take narrow views, their
# env.h, instead of struct broker). A line that no longer matches fails
# the check, so the list could only shrink. Never add one to make a new
# include pass.
EXCEPTIONS='
'

fail=0

# --- 1. no committed ELF ---------------------------------------------------
elves=$(git ls-files -z | perl -0ne 'chomp; my $m = ""; open(my $f, "<", $_) or next;
    read($f, $m, 4); print "$_\n" if $m eq "\x7fELF"')
if [ -n "$elves" ]; then
    printf '%s\n' "$elves" | sed 's/^/check-tree: committed ELF binary (a build output; git rm --cached it, add it to .gitignore): /'
    fail=1
fi

# --- 2. core/ include layers -----------------------------------------------
# The edges: "includer-path line include" for every quoted include.
edges() {
    git ls-files -z 'core/*.c' 'core/*.h' | xargs -0 awk '/^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
        s = $0; sub(/^[^"]*"/, "", s); sub(/".*/, "", s); print FILENAME, FNR, s }'
}

layer_check() {
    mode=$1
    { git ls-files core include | sed 's/^/F /'
      printf '%s\n' "$RULES" | sed -n 's/^\([a-z_]*\):\(.*\)$/R \1 \2/p'
      printf '%s\n' "$EXCEPTIONS" | awk 'NF >= 2 { print "X", $1, $2 }'
      edges | sed 's/^/E /'
    } | awk -v mode="$mode" '
    function group(p,   d) {
        if (p == "core/main.c") return "main"
        if (p == "core/broker.h") return "broker"
        if (p ~ /^core\/(config|topic_config)\.[ch]$/) return "config"
        if (p ~ /^core\/[^\/]*$/) return "core-top-level(unassigned)"
        if (p ~ /^include\/samsa\//) return "public"
        d = p; sub(/^core\//, "", d); sub(/\/.*/, "", d); return d
    }
    # The file an include names, searched as the compiler does: the
    # includer s folder, then -I core, then -I include.
    function resolve(f, inc,   dir) {
        dir = f; sub(/\/[^\/]*$/, "", dir)
        if ((dir "/" inc) in files) return dir "/" inc
        if (("core/" inc) in files) return "core/" inc
        if (("include/" inc) in files) return "include/" inc
        if (inc == "autoconfig.h") return "build"   # configure output
        if (inc ~ /^core\//) return inc               # generated (core/plugin/paths.h)
        return ""
    }
    $1 == "F" { files[$2] = 1; next }
    $1 == "R" { rule[$2] = ""; for (i = 3; i <= NF; i++) { rule[$2] = rule[$2] " " $i; ok[$2, $i] = 1 }; next }
    $1 == "X" { exc[$2, $3] = 1; excn++; excf[excn] = $2; exci[excn] = $3; next }
    $1 == "E" {
        f = $2; line = $3; inc = $4
        from = group(f)
        to = resolve(f, inc)
        if (to == "") { printf "check-tree: %s:%s: #include \"%s\": no such header in core/ or include/\n", f, line, inc; bad = 1; next }
        tg = to == "build" ? "build" : group(to)
        if (mode == "graph") { if (from != tg) n[from " -> " tg]++; next }
        if (!(from in rule)) { if (!(f in norule)) printf "check-tree: %s: no layer rule for its folder \"%s\" (scripts/check-tree.sh RULES; a new top-level file needs a role in group())\n", f, from
            norule[f] = 1; bad = 1; next }
        rel = to; sub(/^core\//, "", rel)
        if (from == tg || tg == "public" || tg == "build" || ok[from, "*"] || ok[from, tg] || ok[from, rel]) next
        if ((f, inc) in exc) { used[f, inc] = 1; next }
        printf "check-tree: %s:%s: #include \"%s\" (%s): %s may include only%s (scripts/check-tree.sh RULES, ARCHITECTURE.md section 3)\n", \
            f, line, inc, tg, from, rule[from] == "" ? " its own folder" : rule[from]
        bad = 1
    }
    END {
        if (mode == "graph") { for (e in n) printf "%5d  %s\n", n[e], e; exit 0 }
        for (i = 1; i <= excn; i++) if (!((excf[i], exci[i]) in used)) {
            printf "check-tree: known exception \"%s %s\" no longer occurs: remove its line from EXCEPTIONS in scripts/check-tree.sh\n", excf[i], exci[i]
            bad = 1
        }
        exit bad
    }'
}

# --- 3. ARCHITECTURE.md draws the same layers ----------------------------
# Its table (the fenced block after "Which core/ folder may") must say what
# RULES says: "(nothing ...)" for an empty rule, "main.c everything" for *.
doc=$(awk '/^Which core\/ folder may/ { on = 1 } on && /^```/ { n++; next } on && n == 1' ARCHITECTURE.md |
    awk '/^[^ ]/ { if (k != "") print k, v; k = $1; $1 = ""; v = $0; next } { v = v " " $0 } END { if (k != "") print k, v }' |
    sed -e 's/([^)]*)//g' -e 's/^main\.c *everything/main */' | awk '{ $1 = $1; print }')
rules=$(printf '%s\n' "$RULES" | sed -n 's/^\([a-z_]*\):/\1/p' | awk '{ $1 = $1; print }')
if [ "$doc" != "$rules" ]; then
    echo "check-tree: ARCHITECTURE.md section 3's layer table differs from RULES in scripts/check-tree.sh:"
    printf '%s\n' "$rules" >"${TMPDIR:-/tmp}/check-tree.rules.$$"
    printf '%s\n' "$doc" | diff "${TMPDIR:-/tmp}/check-tree.rules.$$" - | sed 's/^/  /' || true
    rm -f "${TMPDIR:-/tmp}/check-tree.rules.$$"
    fail=1
fi

if [ "${1-}" = "--graph" ]; then
    layer_check graph | sort -k2
    exit 0
fi
layer_check check || fail=1

if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "check-tree: no committed ELF; core/ include layers OK and as ARCHITECTURE.md draws them"
