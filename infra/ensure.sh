#!/usr/bin/env bash
# Makes sure what the README's commands need is there, and says what it did.
#   deps        install npm dependencies when node_modules is missing or older than the lockfile
#   services    make PostgreSQL and Redis reachable at DATABASE_URL / REDIS_URL (or the defaults):
#               use what already listens, else a container engine, else local binaries,
#               else install them from the distribution's packages. Nothing else: this is all
#               `npm run demo` needs.
#   test-tools  what only the test suite runs: the redis-server binary (the resilience tests
#               restart a Redis of their own), PgBouncer (the pooled-PostgreSQL test) and Debian's
#               headless Chromium at /usr/bin/chromium (the browser tests; nothing ever downloads
#               a browser), systemd-analyze (checks infra/systemd's units) and pg_dump/pg_restore
#               (the backup and restore journey).
# An install or start that fails ends the script with one line saying what failed and what to do,
# and a non-zero exit.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

say() { printf '[ensure] %s\n' "$*" >&2; }
fail() {
  say "$*"
  exit 1
}
# Anything else that fails under `set -e` still says which step it was.
trap 'status=$?; say "failed (exit $status) at: $BASH_COMMAND"; exit $status' ERR

PG_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
REDIS_URL_="${REDIS_URL:-redis://127.0.0.1:6379}"
hostport() { # url -> "host port"
  local rest="${1#*://}"; rest="${rest##*@}"; rest="${rest%%/*}"
  local host="${rest%%:*}" port="${rest##*:}"; [ "$port" = "$rest" ] && port="$2"
  echo "$host $port"
}
reachable() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_for() { for _ in $(seq 1 60); do reachable "$1" "$2" && return 0; sleep 0.5; done; return 1; }
have_engine() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

ensure_deps() {
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "installing npm dependencies (npm ci)"
    npm ci --no-audit --no-fund >&2 || fail "npm ci failed (its output is above); fix what it names, then run this again"
  fi
}

# apt-get install "$@", or one line saying why not and what to do. apt-get's own output goes to a
# file that the line names, so the terminal shows the reason rather than apt's progress.
apt_install() {
  local what="$*" as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
      as_root=(sudo -n)
    else
      fail "cannot install $what: not root and no sudo without a password; install it as root (apt-get install $what), then run this again"
    fi
  fi
  command -v apt-get >/dev/null 2>&1 ||
    fail "cannot install $what: no apt-get here (not Debian or Ubuntu); install $what with this system's package manager, then run this again"
  say "installing $what from Debian's packages"
  local log; log=$(mktemp "${TMPDIR:-/tmp}/feedmirror-apt.XXXXXX")
  local ok=1
  # A failed update (an unreachable mirror) may still leave lists good enough to install from.
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$log" 2>&1 || true
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >>"$log" 2>&1 || ok=0
  if [ "$ok" -eq 1 ]; then rm -f "$log"; return 0; fi
  if grep -qiE 'could not get lock|unable to acquire the dpkg|unable to lock' "$log"; then
    fail "cannot install $what: apt is locked by another process (apt-get, unattended-upgrades); wait for it to finish, then run this again (apt-get's output: $log)"
  elif grep -qiE 'unable to locate package|has no installation candidate' "$log"; then
    fail "cannot install $what: Debian's package lists have no such package; run 'apt-get update' as root or check /etc/apt/sources.list, then run this again (apt-get's output: $log)"
  else
    fail "cannot install $what: apt-get failed: $(grep -E '^E:' "$log" | tail -n 1 || true); see $log, then run this again"
  fi
}

ensure_redis() {
  read -r host port < <(hostport "$REDIS_URL_" 6379)
  if reachable "$host" "$port"; then say "redis: using the server already listening on $host:$port"; return; fi
  if have_engine; then
    say "redis: starting a container on $port"
    docker run -d --rm --name feedmirror-redis -p "$port:6379" redis:7 >/dev/null ||
      fail "redis: the container did not start; start Redis on $host:$port (or set REDIS_URL), then run this again"
  else
    command -v redis-server >/dev/null 2>&1 || apt_install redis-server
    say "redis: starting local redis-server on $port"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no >/dev/null ||
      fail "redis: redis-server did not start on $port; start Redis on $host:$port (or set REDIS_URL), then run this again"
  fi
  wait_for "$host" "$port" || fail "redis did not come up on $host:$port; start it (or set REDIS_URL), then run this again"
}

ensure_postgres() {
  read -r host port < <(hostport "$PG_URL" 5432)
  if reachable "$host" "$port"; then say "postgres: using the server already listening on $host:$port"; return; fi
  if have_engine; then
    say "postgres: starting a container on $port"
    docker run -d --rm --name feedmirror-postgres -e POSTGRES_HOST_AUTH_METHOD=trust -p "$port:5432" postgres:16 >/dev/null ||
      fail "postgres: the container did not start; start PostgreSQL on $host:$port (or set DATABASE_URL), then run this again"
  else
    if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then apt_install postgresql; fi
    local ver; ver=$(ls /etc/postgresql | sort -V | tail -1)
    say "postgres: starting local cluster $ver/main"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || pg_ctlcluster "$ver" main start >&2 ||
      fail "postgres: cluster $ver/main did not start; start PostgreSQL on $host:$port (or set DATABASE_URL), then run this again"
  fi
  wait_for "$host" "$port" || fail "postgres did not come up on $host:$port; start it (or set DATABASE_URL), then run this again"
}

ensure_test_tools() {
  # The resilience tests stop and restart a Redis of their own: the binary, even when a server is reachable.
  if command -v redis-server >/dev/null 2>&1; then say "redis-server: using $(command -v redis-server)"
  else apt_install redis-server; fi
  # The pooled-PostgreSQL test runs its own PgBouncer in transaction mode in front of PostgreSQL.
  if command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]; then say "pgbouncer: using the installed one"
  else apt_install pgbouncer; fi
  # The unit files of infra/systemd are checked with systemd-analyze verify.
  if command -v systemd-analyze >/dev/null 2>&1; then say "systemd-analyze: using $(command -v systemd-analyze)"
  else apt_install systemd; fi
  # docs/production.md's backup and restore are followed with the client tools.
  if command -v pg_dump >/dev/null 2>&1 && command -v pg_restore >/dev/null 2>&1; then say "pg_dump: using $(command -v pg_dump)"
  else apt_install postgresql-client; fi
  if [ -x /usr/bin/chromium ]; then say "chromium: using /usr/bin/chromium"
  else
    apt_install chromium
    [ -x /usr/bin/chromium ] || fail "chromium did not install at /usr/bin/chromium; install Debian's chromium package, then run this again"
  fi
}

for what in "$@"; do
  case "$what" in
    deps) ensure_deps ;;
    services) ensure_redis; ensure_postgres ;;
    test-tools) ensure_test_tools ;;
    *) say "unknown target $what (deps, services, test-tools)"; exit 2 ;;
  esac
done
