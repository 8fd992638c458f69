#!/usr/bin/env bash
# Bad arguments get a message naming the argument and a non-zero exit, and write nothing.
set -uo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "$1"; exit 1; }
expect() {  # expect CODE PATTERN ARGS...
  local code=$1 pattern=$2; shift 2
  "$stiefel" "$@" > "$work/out.txt" 2>&1
  local rc=$?
  [ "$rc" -eq "$code" ] || { cat "$work/out.txt"; fail "stiefel $*: exit $rc, expected $code"; }
  grep -q -- "$pattern" "$work/out.txt" || { cat "$work/out.txt"; fail "stiefel $*: no '$pattern' in the message"; }
}
expect 2 "--claims" certify --claims '(' --out "$work/a.json"
expect 2 "matches no registered claim" certify --claims 'no-such-claim' --out "$work/a.json"
expect 2 "--cases" certify --cases 0 --out "$work/a.json"
expect 2 "--precision" certify --precision quad --out "$work/a.json"
expect 2 "--swap-control" certify --swap-control 'prop8-decay-annihilated:nothing' --out "$work/a.json"
c=$("$stiefel" certify --list | awk '/^ +control / {print claim ":" substr($2, 1, length($2) - 1); exit} /^[a-z0-9]/ {claim = $1}')
expect 2 "one per claim" certify --swap-control "$c" --swap-control "$c" --out "$work/a.json"
[ ! -e "$work/a.json" ] || fail "a certificate was written for bad arguments"
mkdir -p "$work/dir.json"
# --out is checked before the suite runs (exit 2 at once, not after it): a folder, a symbolic link, a
# path under a file.
expect 2 "is a folder" certify --cases 2 --claims '^prop8' --out "$work/dir.json"
echo keep > "$work/kept.json" && ln -s kept.json "$work/link.json"
expect 2 "symbolic link" certify --cases 2 --claims '^prop8' --out "$work/link.json"
[ -L "$work/link.json" ] && [ "$(cat "$work/kept.json")" = keep ] || fail "the symbolic link was replaced"
expect 2 "is not a folder" certify --cases 2 --claims '^prop8' --out "$work/kept.json/cert.json"
echo "bad input rejected"
