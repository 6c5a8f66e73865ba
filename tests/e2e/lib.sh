# Shared helpers for the e2e shell tests: each check prints what failed.
set -uo pipefail
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect_output NAME EXPECTED_RC PATTERN -- COMMAND...: runs COMMAND, checks
# its exit status and that stdout+stderr matches the extended regex PATTERN.
expect_output() {
  local name=$1 rc=$2 pattern=$3; shift 4
  local out status
  out=$("$@" 2>&1); status=$?
  if [ "$status" != "$rc" ]; then fail "$name: exit $status, expected $rc; output:"; echo "$out" >&2; return; fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then fail "$name: output does not match /$pattern/:"; echo "$out" >&2; fi
}

finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}
