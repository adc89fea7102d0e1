#!/bin/sh
# "Every kind real" (issue 11): each capability kind of the plugin ABI
# (enum samsa_cap_kind in include/samsa/plugin.h) must have
#   1. a call site: code outside the loader that calls the kind's vtable
#      (in core/, or in tools/ for the kinds clients use: samsactl and the
#      librdkafka plugin);
#   2. a provider: a module (modules/), an example plugin (plugins/) or a
#      test fixture (tests/unit/plugin-fixtures/) that registers one;
#   3. a test that loads a provider and calls it (a file under tests/
#      naming the kind's SAMSA_CAP_* constant or its vtable).
# A kind listed in PENDING is reported as pending instead of failing, with
# the reason; remove it from PENDING in the change that makes it real (a
# real kind still listed is reported, not failed).
# Reads the committed tree only (git ls-files), needs no build.
# Usage: scripts/check-kinds.sh        (exit 1 when a kind is not real)
set -eu
cd "$(dirname "$0")/.."

PENDING='
TIER        the tiered-storage issue (the log does not call the tier kind yet)
'

# kind   call-site regex (extended grep)                        where
CALLS='
CODEC       vt\.codec\.                                           core
SASL        vt\.sasl\.                                            core
ASSIGNOR    (as|vt\.assignor)(->|\.)assign\(                      core
TIER        vt\.tier\.                                            core
AUTHORIZER  vt\.authorizer\.(authorize)                           core
PARTITIONER (vt\.partitioner\.|vt\.partition(_record)?\b)        core tools
'

files() { git ls-files -- "$@" 2>/dev/null; }

kinds=$(sed -n 's/^[[:space:]]*SAMSA_CAP_\([A-Z]*\)[[:space:]]*=.*/\1/p' include/samsa/plugin.h)
[ -n "$kinds" ] || { echo "check-kinds: no SAMSA_CAP_* kinds found in include/samsa/plugin.h"; exit 1; }
fail=0
for k in $kinds; do
    line=$(printf '%s\n' "$CALLS" | awk -v k="$k" '$1 == k')
    if [ -z "$line" ]; then
        echo "check-kinds: $k: no call-site rule in scripts/check-kinds.sh (add one)"
        fail=1
        continue
    fi
    re=$(printf '%s\n' "$line" | awk '{print $2}')
    where=$(printf '%s\n' "$line" | awk '{for (i = 3; i <= NF; i++) printf "%s ", $i}')
    why=""
    # 1. a call site, outside the loader (which only copies vtables)
    call=$(for d in $where; do files "$d/*.c"; done | grep -v '^core/plugin/registry.c$' |
        xargs -r grep -lE "$re" 2>/dev/null | grep -v '^tools/bench/' | head -1 || true)
    [ -n "$call" ] || why="no call site in $where"
    # 2. a provider
    prov=$(files 'modules/*.c' 'plugins/*.c' 'tests/unit/plugin-fixtures/*.c' 'core/*.c' |
        xargs -r grep -lE "kind[[:space:]]*=[[:space:]]*SAMSA_CAP_$k\b" 2>/dev/null | head -1 || true)
    [ -n "$prov" ] || why="${why:+$why; }no module, plugin or fixture registers one"
    # 3. a test
    lower=$(echo "$k" | tr 'A-Z' 'a-z')
    test=$(files 'tests/*.c' 'tests/*.py' | grep -v '^tests/unit/plugin-fixtures/' | xargs -r grep -lE "SAMSA_CAP_$k\b|vt\.$lower\b" 2>/dev/null | head -1 || true)
    [ -n "$test" ] || why="${why:+$why; }no test calls one"
    pend=$(printf '%s\n' "$PENDING" | awk -v k="$k" '$1 == k { $1 = ""; sub(/^ +/, ""); print }')
    if [ -z "$why" ]; then
        # a stale PENDING line is harmless: said, not failed
        [ -z "$pend" ] || echo "check-kinds: $k is real now: remove it from PENDING in scripts/check-kinds.sh"
        echo "check-kinds: $(printf '%-11s' "$k") real: called in $call, provided by $prov, tested in $test"
    elif [ -n "$pend" ]; then
        echo "check-kinds: $(printf '%-11s' "$k") PENDING ($pend): $why"
    else
        echo "check-kinds: $k is not real: $why"
        fail=1
    fi
done
exit $fail
