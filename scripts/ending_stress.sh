#!/bin/sh
# The "it ends" figures of docs/RELIABILITY.md: `turnguard proxy --grace 1 -- yes` run N
# times (default 20), ended once by the client leaving (stdin EOF) and once by SIGTERM,
# and `turnguard run -- yes` ended by SIGTERM, idle and then beside two CPU burners. Prints
# each run's time to the end and a summary: how many ended within the bound (EOF: 6 s from
# the start, the client leaving at once; SIGTERM: 1 s).
# Usage: scripts/ending_stress.sh [BIN] [N]   (make ending-stress)
set -u
BIN=${1:-dist/turnguard}
N=${2:-20}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

now_ms() { date +%s%3N; }

# One run ended by the client's EOF; prints the milliseconds from EOF to the end.
eof_run() {
  start=$(now_ms)
  timeout -s KILL 60 "$BIN" proxy --no-journal --grace 1 -- yes </dev/null >/dev/null 2>&1
  echo $(($(now_ms) - start))
}

# One run ended by SIGTERM once the agent runs; prints the milliseconds from SIGTERM to
# the end (60000 when it had to be killed). Its arguments: turnguard's (default: the proxy).
term_run() {
  [ $# -gt 0 ] || set -- proxy --no-journal --grace 1 -- yes
  mkfifo "$TMP/in"
  "$BIN" "$@" <"$TMP/in" >/dev/null 2>&1 &
  pid=$!
  exec 7>"$TMP/in" # the client: holds turnguard's stdin open
  # Once its agent runs (turnguard's handlers are in place).
  while [ -z "$(cat /proc/$pid/task/$pid/children 2>/dev/null)" ]; do sleep 0.05; done
  sleep 0.5
  start=$(now_ms)
  kill -TERM "$pid"
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
  took=$(($(now_ms) - start))
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; took=60000; fi
  wait "$pid" 2>/dev/null
  exec 7>&-
  rm -f "$TMP/in"
  echo "$took"
}

# `run -- yes` ended by SIGTERM (its stdin is the agent's; it has no client to leave).
run_term_run() { term_run run --no-journal -- yes; }

# Runs each kind N times; prints one line per kind: the times and how many were within.
series() {
  label=$1
  for kind in eof term run_term; do
    bound=$([ $kind = eof ] && echo 6000 || echo 1000)
    times=""
    ok=0
    n=0
    while [ $n -lt "$N" ]; do
      t=$(${kind}_run)
      times="$times $t"
      # EOF: grace 1 s + SIGTERM + start-up of the binary; 6 s is "a few seconds".
      [ "$t" -le "$bound" ] && ok=$((ok + 1))
      n=$((n + 1))
    done
    echo "$label $kind: $ok/$N within ${bound} ms; ms:$times"
  done
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
series idle
sh -c 'while :; do :; done' &
b1=$!
sh -c 'while :; do :; done' &
b2=$!
series busy
kill "$b1" "$b2"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
