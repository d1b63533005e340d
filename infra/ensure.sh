#!/usr/bin/env bash
# Makes sure what the README's commands need is there, and says what it did.
#   deps      install npm dependencies when node_modules is missing or older than the lockfile
#   services  make PostgreSQL and Redis reachable at DATABASE_URL / REDIS_URL (or the defaults):
#             use what already listens, else a container engine, else local binaries,
#             else install them from the distribution's packages.
#   browser   make Debian's headless Chromium available at /usr/bin/chromium for the browser tests
#             (installed from the distribution's packages; nothing ever downloads a browser).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[ensure] %s\n' "$*" >&2; }

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
    npm ci --no-audit --no-fund >&2
  fi
}

apt_install() {
  say "installing $* from Debian's packages"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >&2
}

ensure_redis() {
  read -r host port < <(hostport "$REDIS_URL_" 6379)
  if reachable "$host" "$port"; then say "redis: using the server already listening on $host:$port"; return; fi
  if have_engine; then
    say "redis: starting a container on $port"; docker run -d --rm --name feedmirror-redis -p "$port:6379" redis:7 >/dev/null
  else
    command -v redis-server >/dev/null 2>&1 || apt_install redis-server
    say "redis: starting local redis-server on $port"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no >/dev/null
  fi
  wait_for "$host" "$port" || { say "redis did not come up on $host:$port"; exit 1; }
}

ensure_postgres() {
  read -r host port < <(hostport "$PG_URL" 5432)
  if reachable "$host" "$port"; then say "postgres: using the server already listening on $host:$port"; return; fi
  if have_engine; then
    say "postgres: starting a container on $port"
    docker run -d --rm --name feedmirror-postgres -e POSTGRES_HOST_AUTH_METHOD=trust -p "$port:5432" postgres:16 >/dev/null
  else
    if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then apt_install postgresql; fi
    local ver; ver=$(ls /etc/postgresql | sort -V | tail -1)
    say "postgres: starting local cluster $ver/main"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || pg_ctlcluster "$ver" main start >&2
  fi
  wait_for "$host" "$port" || { say "postgres did not come up on $host:$port"; exit 1; }
}

for what in "$@"; do
  case "$what" in
    deps) ensure_deps ;;
    services)
      ensure_redis; ensure_postgres
      # The resilience tests restart a Redis of their own: they need the binary even when a server is reachable.
      command -v redis-server >/dev/null 2>&1 || apt_install redis-server
      # The pooled-PostgreSQL test runs its own PgBouncer in transaction mode in front of PostgreSQL.
      command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || apt_install pgbouncer
      ;;
    browser)
      if [ -x /usr/bin/chromium ]; then say "chromium: using /usr/bin/chromium"
      else apt_install chromium; [ -x /usr/bin/chromium ] || { say "chromium did not install at /usr/bin/chromium"; exit 1; }
      fi
      ;;
    *) say "unknown target $what"; exit 2 ;;
  esac
done
