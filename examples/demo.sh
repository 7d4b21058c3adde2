#!/usr/bin/env bash
# The demo: a stand-in for `agy --print` hits a quota error, exits 0 and prints nothing;
# the compiled turnguard binary surfaces the cause from the agent's own log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bin=dist/turnguard
agent=examples/agents/agy
export HOME; HOME=$(mktemp -d)
trap 'rm -rf "$HOME"' EXIT

# Bold headings only on a terminal, and never with NO_COLOR set (https://no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
else
  say() { printf '\n%s\n' "$*"; }
fi

say '$ agy --print "say hi"            # the agent alone'
"$agent" --print "say hi"
echo "(exit $?, no output: the user sees \"(no response)\")"

say '$ turnguard run -- agy --print "say hi"'
"$bin" run -- "$agent" --print "say hi"
echo "(exit $?)"

say '$ turnguard run --outcome-json -- agy --print "say hi"'
"$bin" run --outcome-json -- "$agent" --print "say hi"
echo "(exit $?)"

say '$ turnguard wait --print          # what a coordinator asks afterwards: the failed turn, not an old reply'
"$bin" wait --print
echo "(exit $?)"

say '$ FAKE_AGY=ok turnguard run -- agy --print "say hi"   # a healthy turn passes through'
FAKE_AGY=ok "$bin" run -- "$agent" --print "say hi"
echo "(exit $?)"
