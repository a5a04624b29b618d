#!/bin/sh
# criu_probe.sh — can CRIU checkpoint and restore a cellgate sandbox on this machine?
#
# Not a test (never run by ctest or scripts/test.sh): a probe for docs/design/criu.md, "Pausing idle
# sessions to disk (CRIU)". It starts one sandboxed Python kernel with `cellgate kernel`
# (exactly as a session does) in a state dir of its own, sets `a = 41`, then:
#   1. `criu check`;
#   2. `runc checkpoint --leave-running` with each option set a pause would plausibly need,
#      printing exit code, seconds, image size, runc's message and the CRIU log's errors;
#   3. if a checkpoint worked: a real pause (checkpoint without --leave-running), a
#      `runc restore`, their times and image size, and whether `print(a + 1)` still prints
#      42 through the host's connection file; if none worked, one `runc restore` into a
#      copy of the bundle (own id and cgroup) to show restore's own error.
# It removes everything it made (its container, its state dir); nothing else is touched.
#
# Usage (as root, from the repository): tests/bench/criu_probe.sh [path/to/cellgate]
# Needs: criu (Debian package `criu`), runc, /usr/bin/python3 with jupyter_client
# (python3-jupyter-client) for the variable check.
set -u

CELLGATE=${1:-build/cellgate}
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "criu_probe: run as root (runc and criu need it)"; exit 2; }
[ -x "$CELLGATE" ] || { echo "criu_probe: no cellgate binary at $CELLGATE (build first)"; exit 2; }
command -v criu >/dev/null || { echo "criu_probe: criu is not installed (apt-get install criu)"; exit 2; }
command -v runc >/dev/null || { echo "criu_probe: runc is not installed"; exit 2; }

T=$(mktemp -d /tmp/cellgate-criu-probe.XXXXXX)
R=$T/state/runtime-runc
CG_PID=
RESTORE_ID=cg-criu-probe-restore

cleanup () {
    exec 3>&- # the kernel's stdin: EOF stops `cellgate kernel`, which removes its sandbox
    if [ -n "$CG_PID" ]; then
        i=0
        while kill -0 "$CG_PID" 2>/dev/null && [ $i -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
        kill -0 "$CG_PID" 2>/dev/null && kill "$CG_PID" && sleep 2
    fi
    # Containers left in our own runtime root (a restored one cellgate did not know of).
    for id in $(runc --root "$R" list -q 2>/dev/null); do runc --root "$R" delete --force "$id"; done
    if findmnt -rn -o TARGET | grep -q "^$T"; then
        echo "criu_probe: mounts left under $T, not removing it:"
        findmnt -rn -o TARGET | grep "^$T"
    else
        rm -r "$T"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "== machine: kernel $(uname -r); $(criu --version | head -1); $(runc --version | head -1)"
grep -E '\[(vvar|vvar_vclock|vdso)\]' /proc/self/maps | awk '{print "   " $NF}' | tr '\n' ' '
echo
echo "== criu check"
criu check 2>&1 | sed 's/^/   /'
command -v iptables >/dev/null ||
    echo "   (util.c:642 'exited, status=1' lines: CRIU probing a missing iptables; harmless here)"

# ---------------------------------------------------------------- the sandboxed kernel
mkfifo "$T/in"
exec 3<>"$T/in" # held open here: `cellgate kernel` runs until its stdin closes
"$CELLGATE" kernel --state-dir "$T/state" <"$T/in" >"$T/out" 2>"$T/err" &
CG_PID=$!
i=0
while [ ! -s "$T/out" ] && kill -0 "$CG_PID" 2>/dev/null && [ $i -lt 120 ]; do
    sleep 0.5
    i=$((i + 1))
done
CONN=$(head -1 "$T/out")
if [ -z "$CONN" ]; then
    echo "criu_probe: cellgate kernel did not start:"
    cat "$T/err"
    exit 1
fi
ID=$(runc --root "$R" list -q | head -1)
BUNDLE=$(runc --root "$R" state "$ID" | $PY -c 'import json,sys; print(json.load(sys.stdin)["bundle"])')
echo "== sandbox: container $ID (runtime root $R)"

cat >"$T/kexec.py" <<'EOF'
import sys
try:
    from jupyter_client import BlockingKernelClient
except ImportError:
    print("skipped (no jupyter_client)")
    sys.exit(0)
kc = BlockingKernelClient()
kc.load_connection_file(sys.argv[1])
kc.start_channels()
try:
    kc.wait_for_ready(timeout=20)
    out = []
    hook = lambda m: out.append(m["content"].get("text", m["content"].get("evalue", "")))
    reply = kc.execute_interactive(sys.argv[2], timeout=20, output_hook=hook)
    print(reply["content"]["status"], "".join(out).strip())
except Exception as e:
    print("failed:", type(e).__name__, e)
finally:
    kc.stop_channels()
EOF
echo "== kernel: a = 41 -> $($PY "$T/kexec.py" "$CONN" 'a = 41; print(a)')"

now () { date +%s.%N; }
seconds () { echo "$2 - $1" | bc; }
errors () { [ -f "$1" ] && grep 'Error' "$1" | sed 's/^/   log: /'; }

# ---------------------------------------------------------------- checkpoint attempts
WORKED=
WORKED_SET=
n=0
for opts in "" "--tcp-established" "--ext-unix-sk" "--file-locks" \
    "--manage-cgroups-mode soft" "--manage-cgroups-mode full" "--manage-cgroups-mode strict" \
    "--manage-cgroups-mode ignore" "--empty-ns network" \
    "--tcp-established --ext-unix-sk --file-locks --manage-cgroups-mode soft --empty-ns network"; do
    n=$((n + 1))
    mkdir -p "$T/img.$n" "$T/work.$n"
    s=$(now)
    # shellcheck disable=SC2086 # opts is a list of options
    msg=$(runc --root "$R" checkpoint --leave-running $opts --image-path "$T/img.$n" \
        --work-path "$T/work.$n" "$ID" 2>&1)
    rc=$?
    e=$(now)
    echo "== [$n] runc checkpoint --leave-running $opts: exit $rc, $(seconds "$s" "$e") s," \
        "image $(du -sh "$T/img.$n" | cut -f1)"
    [ -n "$msg" ] && echo "$msg" | sed 's/^/   /'
    errors "$T/work.$n/dump.log"
    [ $rc = 0 ] && [ -z "$WORKED_SET" ] && WORKED="$opts" && WORKED_SET=1
done

# ---------------------------------------------------------------- pause and restore
if [ -z "$WORKED_SET" ]; then
    # No image: restore into a copy of the bundle with its own id and cgroup, for its error.
    mkdir -p "$T/rbundle" "$T/rwork"
    $PY -c 'import json,sys; c=json.load(open(sys.argv[1])); c["linux"]["cgroupsPath"]="/cellgate/'$RESTORE_ID'"; json.dump(c, open(sys.argv[2], "w"))' \
        "$BUNDLE/config.json" "$T/rbundle/config.json"
    msg=$(runc --root "$R" restore -d --image-path "$T/img.1" --work-path "$T/rwork" \
        --bundle "$T/rbundle" "$RESTORE_ID" 2>&1)
    echo "== runc restore -d (no usable image, own id and cgroup): exit $?"
    [ -n "$msg" ] && echo "$msg" | sed 's/^/   /'
    errors "$T/rwork/restore.log"
    echo "== kernel untouched: print(a + 1) -> $($PY "$T/kexec.py" "$CONN" 'print(a + 1)')"
    echo "criu_probe: RESULT checkpoint fails here: $(grep -h 'Error' "$T"/work.*/dump.log | grep -v 'util.c' | head -1 | sed 's/^([0-9. ]*) //')"
    exit 1
fi

mkdir -p "$T/pause" "$T/pwork"
s=$(now)
# shellcheck disable=SC2086
runc --root "$R" checkpoint $WORKED --image-path "$T/pause" --work-path "$T/pwork" "$ID"
rc=$?
e=$(now)
echo "== pause: runc checkpoint $WORKED: exit $rc, $(seconds "$s" "$e") s, image $(du -sh "$T/pause" | cut -f1)"
errors "$T/pwork/dump.log"
[ $rc = 0 ] || { echo "criu_probe: RESULT pause (non-leave-running checkpoint) fails"; exit 1; }
s=$(now)
# shellcheck disable=SC2086
runc --root "$R" restore -d $WORKED --image-path "$T/pause" --work-path "$T/pwork" \
    --bundle "$BUNDLE" "$ID"
rc=$?
e=$(now)
echo "== restore: runc restore -d $WORKED: exit $rc, $(seconds "$s" "$e") s"
errors "$T/pwork/restore.log"
[ $rc = 0 ] || { echo "criu_probe: RESULT restore fails"; exit 1; }
echo "== after restore, through the host's connection file: print(a + 1) ->" \
    "$($PY "$T/kexec.py" "$CONN" 'print(a + 1)')"
echo "criu_probe: RESULT checkpoint and restore work with: ${WORKED:-(no options)}"
