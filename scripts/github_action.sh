#!/usr/bin/env bash
# The composite action's step (action.yml): `pawl run` with the action's inputs, its reports,
# and its step outputs in $GITHUB_OUTPUT. The inputs arrive as PAWL_ACTION_* variables (the
# key as PAWL_API_KEY, never on a command line); `pawl run` writes passed, status, run-id and
# console-url itself, this script adds exit-code. Exits with `pawl run`'s code: 0 passed,
# 1 failed its gates, 2 no verdict.
set -uo pipefail

fail() { echo "pawl action: $*" >&2; exit 2; }

[ -n "${GITHUB_OUTPUT:-}" ] || fail "GITHUB_OUTPUT is not set (run this as a GitHub Actions step)"
[ -n "${PAWL_ACTION_EVAL:-}" ] || fail "the eval input is required (an eval id)"
[ -n "${PAWL_SERVER:-}" ] || fail "the server input is required (the URL of a running pawl)"
[ -n "${PAWL_API_KEY:-}" ] || fail "the api-key input is required (pass it from a secret)"
if [ -n "${GITHUB_ACTIONS:-}" ]; then echo "::add-mask::${PAWL_API_KEY}"; fi

args=(run --eval "$PAWL_ACTION_EVAL" --github-output "$GITHUB_OUTPUT")
[ -n "${PAWL_ACTION_BASELINE:-}" ] && args+=(--baseline "$PAWL_ACTION_BASELINE")
[ -n "${PAWL_ACTION_AGENT_VERSION:-}" ] && args+=(--agent-version "$PAWL_ACTION_AGENT_VERSION")
[ -n "${PAWL_ACTION_JUNIT:-}" ] && args+=(--junit "$PAWL_ACTION_JUNIT")
[ -n "${PAWL_ACTION_MARKDOWN:-}" ] && args+=(--markdown "$PAWL_ACTION_MARKDOWN")
[ -n "${PAWL_ACTION_TIMEOUT:-}" ] && args+=(--timeout "$PAWL_ACTION_TIMEOUT")
# The commit and the workflow run, so the run's page says what it tested.
metadata=()
[ -n "${GITHUB_SHA:-}" ] && metadata+=("commit=$GITHUB_SHA")
[ -n "${GITHUB_REF_NAME:-}" ] && metadata+=("ref=$GITHUB_REF_NAME")
if [ -n "${GITHUB_RUN_ID:-}" ]; then
  metadata+=("github_run=${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-}/actions/runs/$GITHUB_RUN_ID")
fi
[ ${#metadata[@]} -gt 0 ] && args+=(--metadata "${metadata[@]}")

"${PAWL_PYTHON:-python}" -m pawl.cli "${args[@]}"
code=$?
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
exit "$code"
