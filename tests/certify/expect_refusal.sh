# Sourced by the `certify --rule` tests: expect PATTERN ARGS... runs `stiefel certify ARGS` and
# requires exit 2, PATTERN in its message, and no certificate written. Needs $stiefel, $work and
# fail MESSAGE from the sourcing script; leaves the message in $work/out.txt.
expect() {
  local pattern=$1; shift
  rm -f "$work/none.json"
  "$stiefel" certify "$@" --out "$work/none.json" > "$work/out.txt" 2>&1
  local rc=$?
  [ "$rc" -eq 2 ] || { cat "$work/out.txt"; fail "stiefel certify $*: exit $rc, expected 2"; }
  grep -q -- "$pattern" "$work/out.txt" || { cat "$work/out.txt"; fail "stiefel certify $*: no '$pattern' in the message"; }
  [ ! -e "$work/none.json" ] || fail "stiefel certify $*: a certificate was written"
}
