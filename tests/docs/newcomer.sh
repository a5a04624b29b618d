#!/usr/bin/env bash
# The newcomer's path (ctest docs_newcomer, labels docs;e2e;root;slow): a fresh local clone of
# the repository (its HEAD: commit what you want tested), then the README's commands in the
# README's order, as root and then as the normal user scripts/setup.sh test makes, each one
# checked to exit 0 or to serve. The commands are taken from README.md's ```sh blocks (a
# README that changes a command to one that does not work fails here); the few that are
# prose are looked up literally in README.md first.
#   tests/docs/newcomer.sh [REPO]        (user: $CELLGATE_TEST_USER, else cellgate-test)
# Exits 77 (ctest's skip) when not root or when the user does not exist.
#
# What is not run: ./scripts/run.sh and ./scripts/test.sh themselves (they install with apt
# and npm, and test.sh runs the whole suite): set-up is taken as done on this machine, so
# `scripts/run.sh --dry-run` is run instead (exit 0, dpkg's database untouched), and the
# clone gets the npm modules setup.sh would have installed (hard links to REPO's); the demo;
# `scripts/test.sh quick` and the single e2e file (long: `scripts/test.sh --help` is run, and
# must name the modes the README uses); the Docker variant. Servers listen on 127.0.0.1 only,
# on a free port (the README's 0.0.0.0:8765 and 127.0.0.1:8080 are rewritten), and nothing
# but this machine is contacted. The build is made once, as root, and the normal user runs
# that build ("The build directory must be readable by that user").
set -uo pipefail
repo=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
user=${CELLGATE_TEST_USER:-cellgate-test}
if [ "$(id -u)" != 0 ]; then
  echo "newcomer: runs as root (and switches to $user)" >&2
  exit 77
fi
if ! id "$user" >/dev/null 2>&1; then
  echo "newcomer: there is no user $user (scripts/setup.sh test makes it)" >&2
  exit 77
fi
for need in "$repo/tests/e2e/node_modules" "$repo/kernels/javascript/node_modules"; do
  if [ ! -d "$need" ]; then
    echo "newcomer: $need is missing (scripts/setup.sh test installs it)" >&2
    exit 77
  fi
done
user_home=$(getent passwd "$user" | cut -d: -f6)
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] \
  || echo "newcomer: note: $repo has uncommitted changes; the clone tests its HEAD"

tmp=$(mktemp -d /tmp/cg-newcomer.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf -- "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
  echo "newcomer: FAIL: $*"
  failures=$((failures + 1))
}
step() { echo; echo "== newcomer ($1): $2"; }

# --- the clone, readable by the user ---------------------------------------------------------
git clone -q --no-hardlinks "$repo" "$tmp/cellgate" || { echo "newcomer: git clone failed"; exit 1; }
clone=$tmp/cellgate
head=$(git -C "$repo" rev-parse HEAD)
git -C "$clone" checkout -q --detach "$head" || { echo "newcomer: no $head in the clone"; exit 1; }
echo "newcomer: a fresh clone of $repo at $(git -C "$clone" log -1 --format='%h %s' | cut -c1-100)"
cp -al "$repo/tests/e2e/node_modules" "$clone/tests/e2e/node_modules" 2>/dev/null \
  || cp -a "$repo/tests/e2e/node_modules" "$clone/tests/e2e/node_modules"
cp -al "$repo/kernels/javascript/node_modules" "$clone/kernels/javascript/node_modules" 2>/dev/null \
  || cp -a "$repo/kernels/javascript/node_modules" "$clone/kernels/javascript/node_modules"
chmod -R a+rX "$clone"
readme=$clone/README.md

# The README's ```sh blocks as logical lines: continuations joined, comments after two
# spaces dropped, one command per line, in order.
/usr/bin/python3 - "$readme" >"$tmp/commands" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
for block in re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", text, flags=re.S | re.M):
    for line in re.sub(r"\\\n\s*", "", block).splitlines():
        line = re.sub(r"\s{2,}#.*$", "", line).strip()
        if line and not line.startswith("#"):
            print(line)
EOF
echo "newcomer: README.md's commands:"; sed 's/^/  | /' "$tmp/commands"

# readme_command FIXED-STRING: sets cmd to the first README command line containing it
# (a failure if there is none).
readme_command() {
  cmd=$(grep -F -m1 -- "$1" "$tmp/commands") || { fail "README.md has no command with '$1'"; return 1; }
}
# readme_says FIXED-STRING: README.md names it (prose or code).
readme_says() { grep -q -F -- "$1" "$readme" || { fail "README.md does not say '$1'"; return 1; }; }

# as WHO COMMAND: bash -c COMMAND in the clone, as root or as the user, with a clean
# environment such as a login gives (and OMP_NUM_THREADS=2, which caps `nproc`).
as_argv() {
  local home=/root name=root
  [ "$1" = root ] || { home=$user_home; name=$user; }
  argv=()
  [ "$1" = root ] || argv=(setpriv --reuid "$user" --regid "$user" --init-groups)
  argv+=(env -i HOME="$home" USER="$name" LOGNAME="$name" PATH=/usr/local/bin:/usr/bin:/bin
         TMPDIR=/tmp LANG=C.UTF-8 OMP_NUM_THREADS=2 BROWSER=true bash -c)
}
as() {
  local argv
  as_argv "$1"
  (cd "$clone" && exec "${argv[@]}" "$2")
}
# as_bg WHO COMMAND OUT ERR: the same in the background; bg_pid is the command's own pid
# (the subshell execs setpriv, env, bash, and bash -c runs a last simple command in place).
as_bg() {
  local argv
  as_argv "$1"
  (cd "$clone" && exec "${argv[@]}" "$2") >"$3" 2>"$4" &
  bg_pid=$!
  pids+=("$bg_pid")
}

# for_user WHO COMMAND: the README's command with the state dir of WHO (root's is
# /var/lib/cellgate, a normal user's ~/.local/state/cellgate) and our listener's address.
for_user() {
  local who=$1 cmd=$2 state=/var/lib/cellgate
  [ "$who" = root ] || state=$user_home/.local/state/cellgate
  cmd=${cmd//\/var\/lib\/cellgate/$state}
  cmd=${cmd//\~\/.local\/state\/cellgate/$state}
  cmd=${cmd//\$HOME\/.local\/state\/cellgate/$state}
  # The listener the README names (stdio's default 127.0.0.1:8080, or HOST:PORT): ours.
  printf '%s\n' "$cmd" | sed -E "s#http://(127\.0\.0\.1|localhost|HOST):[0-9A-Z]+#http://127.0.0.1:$port#g"
}

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for DESCRIPTION PID COMMAND: COMMAND (bash) until it succeeds, while PID lives, at
# most 240 tries a half second apart.
wait_for() {
  local what=$1 pid=$2 cmd=$3 i
  for ((i = 0; i < 240; i++)); do
    bash -c "$cmd" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { fail "$what: the process exited"; return 1; }
    sleep 0.5
  done
  fail "$what: not ready after 240 tries"
  return 1
}

stop() {
  kill -TERM "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

dpkg_sum() { md5sum /var/lib/dpkg/status | cut -d' ' -f1; }

run_as() {
  local who=$1 cmd out
  echo; echo "######## as $who"

  step "$who" "scripts/run.sh --dry-run installs nothing"
  if readme_says "scripts/run.sh --dry-run"; then
    local before; before=$(dpkg_sum)
    as "$who" "scripts/run.sh --dry-run" >"$tmp/dry.$who" 2>&1 || fail "scripts/run.sh --dry-run exited $?: $(tail -5 "$tmp/dry.$who")"
    [ "$(dpkg_sum)" = "$before" ] || fail "scripts/run.sh --dry-run changed dpkg's database"
    tail -3 "$tmp/dry.$who"
  fi

  if [ "$who" = root ]; then
    step "$who" "the build line"
    if readme_command "cmake -S . -B build"; then
      echo "\$ $cmd"
      as root "$cmd" >"$tmp/build.log" 2>&1 || fail "the build exited $?: $(tail -20 "$tmp/build.log")"
      tail -1 "$tmp/build.log"
    else
      # Failed already; built anyway, to check the README's other commands.
      as root "cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j2" \
        >"$tmp/build.log" 2>&1
    fi
    if [ ! -x "$clone/build/cellgate" ]; then
      fail "no build/cellgate after the build line"
      return
    fi
    chmod -R a+rX "$clone/build"
  fi

  for sub in "build/cellgate help" "build/cellgate help mcp"; do
    step "$who" "$sub"
    readme_says "$sub" || continue
    out=$(as "$who" "$sub" 2>&1) || fail "$sub exited $?: $out"
    [ -n "$out" ] || fail "$sub printed nothing"
    echo "$out" | head -3
  done

  step "$who" "Claude Code's stdio server, through the MCP SDK client"
  if readme_command "claude mcp add cellgate --scope user --"; then
    cmd=${cmd#* -- }
    cmd=${cmd//\/path\/to\/cellgate/$clone}
    echo "\$ $cmd   (initialize, tools/list, execute_code)"
    as "$who" "node tests/docs/newcomer-client.mjs $cmd" || fail "the stdio server ($cmd) did not serve"
    startup_jupyter "$who" "$cmd"
  fi

  step "$who" "the HTTP command, on 127.0.0.1 and a free port"
  port=$(free_port)
  local http_pid="" script=""
  if readme_command "build/cellgate mcp --http"; then
    # The export lines before it (the token's), the token kept for the client (cellgate
    # wipes it from its own environment), then the server, exec'd: its pid is the server's.
    while IFS= read -r line; do
      [ "$line" = "$cmd" ] && break
      case $line in export\ *) script+="$line"$'\n' ;; esac
    done <"$tmp/commands"
    cmd=$(printf '%s\n' "$cmd" | sed -E "s/--http [^ ]+/--http 127.0.0.1:$port/")
    case $cmd in *0.0.0.0*) fail "not run: it would listen beyond loopback: $cmd"; cmd="" ;; esac
  else
    cmd=""
  fi
  if [ -n "$cmd" ]; then
    printf '$ %s\n' "$script$cmd"
    : >"$tmp/token.$who"
    [ "$who" = root ] || chown "$user" "$tmp/token.$who"
    script+="printf %s \"\${CELLGATE_HTTP_TOKEN:-}\" >$tmp/token.$who"$'\n'
    case $cmd in build/*) script+="exec $cmd" ;; *) script+="$cmd" ;; esac
    as_bg "$who" "$script" "$tmp/http.$who.out" "$tmp/http.$who.err"
    http_pid=$bg_pid
    local url=http://127.0.0.1:$port
    if wait_for "the HTTP server" "$http_pid" "curl -s -o /dev/null $url/mcp"; then
      local token
      token=$(cat "$tmp/token.$who")
      [ -n "$token" ] || fail "the README's HTTP command sets no CELLGATE_HTTP_TOKEN"
      local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"newcomer","version":"1"}}}'
      local hdr=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
      out=$(curl -sS "${hdr[@]}" -H "Authorization: Bearer $token" -d "$init" "$url/mcp" 2>&1)
      echo "POST /mcp initialize: ${out:0:160}"
      grep -q '"protocolVersion"' <<<"$out" || fail "POST /mcp initialize with the bearer: $out"
      local code
      code=$(curl -s -o /dev/null -w '%{http_code}' "${hdr[@]}" -d "$init" "$url/mcp")
      [ "$code" = 401 ] || fail "POST /mcp without the bearer answered $code, not 401"
      jupyter "$who" "$url"
      metrics "$who"
    fi
    stop "$http_pid"
  fi

  if [ "$who" = root ]; then
    step root "one C test, as the README runs it"
    if readme_command "ctest -R"; then
      echo "\$ $cmd"
      as root "$cmd" >"$tmp/ctest.log" 2>&1 || fail "$cmd exited $?: $(tail -20 "$tmp/ctest.log")"
      grep -E 'tests passed|Passed' "$tmp/ctest.log" | tail -1
    fi
    step root "scripts/test.sh --help names the README's modes"
    # A scripts/test.sh without a help mode would run the whole suite: look before running.
    if ! grep -q -- '--help' "$clone/scripts/test.sh"; then
      fail "scripts/test.sh has no --help"
    else
      out=$(as root "scripts/test.sh --help" 2>&1) || fail "scripts/test.sh --help exited $?: $out"
      for mode in $(grep -o -E '^scripts/test\.sh [a-z0-9]+' "$tmp/commands" | cut -d' ' -f2 | sort -u); do
        grep -q -w -- "$mode" <<<"$out" || fail "scripts/test.sh --help does not name '$mode', which README.md runs"
      done
      echo "$out" | head -3
    fi
  fi
}

# jupyter WHO URL: the README's notebook command, for WHO, against the listener at URL.
jupyter() {
  local who=$1 url=$2 cmd line
  step "$who" "the Jupyter command, against the gateway"
  # The command whose token path is this user's, else the first one, adapted to this user.
  local want=/var/lib/cellgate/
  [ "$who" = root ] || want=.local/state/cellgate/
  cmd=$(grep -F -- "--gateway-url=" "$tmp/commands" | grep -v '^sudo ' | grep -F -m1 -- "$want") \
    || cmd=$(grep -F -- "--gateway-url=" "$tmp/commands" | grep -v '^sudo ' | head -1)
  [ -n "$cmd" ] || { fail "README.md has no Jupyter command (--gateway-url=)"; return; }
  # What the README installs first with apt: set-up is done here, so it must be installed.
  local pkg
  for pkg in $(sed -n -E 's/^sudo apt-get install (-y )?//p' "$tmp/commands"); do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
      || fail "README.md's 'sudo apt-get install $pkg': $pkg is not an installed package after set-up"
  done
  notebook "$who" "$url" "$(for_user "$who" "$cmd")" readme
}

# startup_jupyter WHO COMMAND: the stdio server of the README's Claude Code COMMAND, its
# listener on a free loopback port (--http-listen; the README's 8080 may be another's), and
# the Jupyter command it printed at start-up (its log line "gateway: ... --gateway-url=..."),
# run as printed when it names that listener (never another host).
startup_jupyter() {
  local who=$1 server=$2 cmd pid
  step "$who" "the Jupyter command a stdio server prints at start-up"
  port=$(free_port)
  local url=http://127.0.0.1:$port fifo=$tmp/stdin.$who err=$tmp/stdio.$who.err
  mkfifo -m 666 "$fifo"
  exec 9<>"$fifo"
  echo "\$ $server --http-listen 127.0.0.1:$port"
  as_bg "$who" "exec $server --http-listen 127.0.0.1:$port <$fifo" /dev/null "$err"
  pid=$bg_pid
  if wait_for "the stdio server's gateway line" "$pid" "grep -q -E 'gateway: .*--gateway-url=' '$err'"; then
    cmd=$(grep -m1 -E 'gateway: .*--gateway-url=' "$err" | sed -E 's/.*gateway: //')
    # The README: the log says where the token is, never the token.
    local state=/var/lib/cellgate gwtoken
    [ "$who" = root ] || state=$user_home/.local/state/cellgate
    gwtoken=$(cat "$state/gateway-token" 2>/dev/null)
    if [ -n "$gwtoken" ] && grep -q -F -- "$gwtoken" "$err"; then
      fail "the stdio server's log holds the gateway token of $state/gateway-token"
    fi
    case $cmd in
      *--gateway-url=$url\ *|*--gateway-url=\'$url\'\ *) notebook "$who" "$url" "$cmd" startup ;;
      *) fail "the printed command does not name the listener $url (not run): $cmd" ;;
    esac
  fi
  stop "$pid"
  exec 9>&-
}

# notebook WHO URL COMMAND TAG: COMMAND serves a notebook whose /api/kernelspecs are the
# gateway's at URL (cellgate's own, asked with WHO's gateway token), not local ones.
notebook() {
  local who=$1 url=$2 cmd=$3 tag=$4 line
  echo "\$ $cmd"
  case $cmd in [A-Z_]*=*) ;; *) cmd="exec $cmd" ;; esac
  as_bg "$who" "$cmd" "$tmp/nb.$who.$tag.out" "$tmp/nb.$who.$tag.log"
  local nb=$bg_pid log=$tmp/nb.$who.$tag.log
  if wait_for "the notebook server" "$nb" "grep -q -E 'http://(localhost|127\.0\.0\.1):[0-9]+/\?token=' '$log'"; then
    line=$(grep -o -m1 -E 'http://(localhost|127\.0\.0\.1):[0-9]+/\?token=[0-9a-f]+' "$log")
    local base=${line%%/\?token=*} nbtoken=${line##*token=}
    local gwtoken state=/var/lib/cellgate
    [ "$who" = root ] || state=$user_home/.local/state/cellgate
    gwtoken=$(cat "$state/gateway-token" 2>/dev/null)
    local theirs ours
    theirs=$(curl -sS -H "Authorization: token $nbtoken" "$base/api/kernelspecs" 2>&1)
    ours=$(curl -sS -H "Authorization: token $gwtoken" "$url/api/kernelspecs" 2>&1)
    echo "notebook's /api/kernelspecs: ${theirs:0:160}"
    local names_theirs names_ours
    names_theirs=$(/usr/bin/python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin)["kernelspecs"])))' <<<"$theirs" 2>/dev/null)
    names_ours=$(/usr/bin/python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin)["kernelspecs"])))' <<<"$ours" 2>/dev/null)
    if [ -z "$names_ours" ]; then
      fail "cellgate's /api/kernelspecs with $state/gateway-token: $ours"
    elif [ "$names_theirs" != "$names_ours" ]; then
      fail "the notebook's kernelspecs ($names_theirs) are not the gateway's ($names_ours): $(tail -5 "$log")"
    fi
  else
    tail -15 "$log"
  fi
  stop "$nb"
}

# metrics WHO: the README's operator curl of /metrics with WHO's admin token.
metrics() {
  local who=$1 cmd out
  step "$who" "the operator's curl of /metrics"
  readme_command "/metrics" || return
  cmd=$(for_user "$who" "$cmd")
  echo "\$ $cmd"
  out=$(as "$who" "$cmd" 2>&1) || fail "$cmd exited $?: $out"
  grep -q '^# TYPE cellgate_' <<<"$out" || fail "/metrics answered no cellgate metric: ${out:0:300}"
  grep -m2 '^# TYPE cellgate_' <<<"$out"
}

run_as root
run_as user

echo
if [ "$failures" -gt 0 ]; then
  echo "newcomer: $failures failure(s)"
  exit 1
fi
echo "newcomer: every README command worked, as root and as $user"
