# Shared by infra/up, infra/test and infra/bench: installing and starting private Redis and
# PostgreSQL instances under a state folder, each on a free port.
# shellcheck shell=bash

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root to run: $*"; fi
}

APT_UPDATED=""
# apt_install PKG...: installs Debian packages that are missing, saying so.
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing from the distribution's packages: ${missing[*]}"
  if [ -z "$APT_UPDATED" ]; then as_root apt-get update -qq >&2; APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] || die "PostgreSQL binaries not found under /usr/lib/postgresql"
  echo "$dir"
}

ensure_stores_installed() {
  command -v redis-server >/dev/null || apt_install redis-server
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_install postgresql
  command -v curl >/dev/null || apt_install curl ca-certificates
}

# ensure_peers_installed: RabbitMQ and NATS, which the benchmark (and its smoke test) runs on private
# ports next to AQS. Only their binaries are used; a system service the packages start is left alone.
ensure_peers_installed() {
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || apt_install rabbitmq-server
  command -v nats-server >/dev/null || apt_install nats-server
}

# free_port: prints a TCP port on 127.0.0.1 nobody listens on. Picked below the kernel's ephemeral
# range (32768+), so an outgoing connection cannot take it between the check and the bind.
free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$(( 15000 + RANDOM % 17000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
  done
  die "no free port found"
}

# wait_for_port PORT SECONDS
wait_for_port() {
  local deadline=$(( SECONDS + $2 ))
  until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.1
  done
}

# start_redis DIR: starts a private Redis with AOF (everysec) and noeviction in DIR; sets REDIS_PORT.
# Reuses the port recorded in DIR when there is one, so data and URLs survive a restart.
start_redis() {
  local dir=$1 attempt
  mkdir -p "$dir"
  REDIS_PORT=$(cat "$dir/port" 2>/dev/null || true)
  for attempt in 1 2 3; do
    if [ -z "$REDIS_PORT" ] || (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null; then REDIS_PORT=$(free_port); fi
    echo "$REDIS_PORT" > "$dir/port"
    cat > "$dir/redis.conf" <<CONF
bind 127.0.0.1
port $REDIS_PORT
dir $dir
daemonize no
appendonly yes
appendfsync ${AQS_REDIS_APPENDFSYNC:-everysec}
maxmemory-policy noeviction
# Rewrite the AOF less often than the default 64 MiB: each rewrite forks and competes for the CPU.
auto-aof-rewrite-min-size 512mb
save ""
logfile $dir/redis.log
CONF
    redis-server "$dir/redis.conf" &
    echo $! > "$dir/pid"
    if wait_for_port "$REDIS_PORT" 20 && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then return 0; fi
    REDIS_PORT="" # most likely taken between the check and the bind: try another
  done
  die "Redis did not start; see $dir/redis.log"
}

# pg_home DIR: prints the folder where the private PostgreSQL of DIR keeps its data, socket, port
# file and log. That is DIR, except as root when the postgres user (PostgreSQL refuses to run as
# root) cannot enter DIR: a state folder made by `mktemp -d`, or under /root, is root-only. Then it
# is a folder of its own under /var/lib/aqs named after DIR (the same DIR finds its data again);
# the member's folder is never opened up.
pg_home() {
  local dir=$1 home
  mkdir -p "$dir"
  if [ "$(id -u)" != 0 ]; then echo "$dir"; return 0; fi
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  chown postgres "$dir"
  if runuser -u postgres -- test -x "$dir" -a -w "$dir" 2>/dev/null; then echo "$dir"; return 0; fi
  home="/var/lib/aqs/postgres-$(printf '%s' "$dir" | sha256sum | cut -c1-16)"
  mkdir -p "$home"
  chmod 755 /var/lib/aqs
  chown postgres "$home"
  chmod 700 "$home"
  echo "$home"
}

# start_postgres DIR: starts a private PostgreSQL for DIR (in `pg_home DIR`; as the postgres user
# when run as root); sets PG_PORT and PG_HOME. Creates database aqs.
start_postgres() {
  local dir bin run=()
  bin=$(pg_bin)
  dir=$(pg_home "$1")
  PG_HOME=$dir
  [ "$dir" = "$1" ] || log "the postgres user cannot enter $1; PostgreSQL keeps its data in $dir"
  [ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    "${run[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || die "initdb failed; see $dir/initdb.log"
  fi
  PG_PORT=$(cat "$dir/port" 2>/dev/null || true)
  local attempt started=""
  for attempt in 1 2 3; do
    if [ -z "$PG_PORT" ] || (exec 3<>"/dev/tcp/127.0.0.1/$PG_PORT") 2>/dev/null; then PG_PORT=$(free_port); fi
    "${run[@]}" sh -c "echo $PG_PORT > '$dir/port'"
    if "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
      -o "-p $PG_PORT -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=${AQS_PG_FSYNC:-on}" \
      start >/dev/null; then
      started=1; break
    fi
    PG_PORT="" # most likely taken between the check and the bind: try another
  done
  [ -n "$started" ] || die "PostgreSQL did not start; see $dir/postgres.log"
  "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qtAc "SELECT 1 FROM pg_database WHERE datname='aqs'" | grep -q 1 \
    || "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE aqs" >/dev/null
}

stop_postgres() {
  local dir run=()
  dir=$(pg_home "$1")
  [ -f "$dir/data/postmaster.pid" ] || return 0
  [ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
  "${run[@]}" "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

# stop_pid PID [SIGNAL]: ends a process this shell started (SIGTERM unless told) and waits for it.
# Never fails: under `set -e` a failing wait (it reports the signal the process died of) would cut
# the caller's cleanup short and leave the rest running.
stop_pid() {
  if [ -n "$1" ] && kill "-${2:-TERM}" "$1" 2>/dev/null; then wait "$1" 2>/dev/null || true; fi
}

stop_redis() {
  local dir=$1
  stop_pid "$(cat "$dir/pid" 2>/dev/null || true)"
  rm -f "$dir/pid"
  return 0
}

# wait_for_health URL PID LOG SECONDS: waits until URL answers 2xx. Dies, with the last lines of
# LOG, if process PID exits first or SECONDS pass without an answer.
wait_for_health() {
  local url=$1 pid=$2 logfile=$3 deadline=$(( SECONDS + $4 ))
  until curl -fsS "$url" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$logfile" >&2 || true
      die "aqs serve exited before it answered $url (log: $logfile)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 40 "$logfile" >&2 || true
      die "aqs serve did not answer $url within $4 s (log: $logfile)"
    fi
    sleep 0.2
  done
}

# cargo_build_bin NAME: builds binary NAME in release mode and prints its path, wherever cargo
# puts it (CARGO_TARGET_DIR, build.target-dir): cargo says so itself in its JSON messages.
cargo_build_bin() {
  local path
  path=$(cargo build --release --locked --bin "$1" --message-format=json-render-diagnostics \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  [ -n "$path" ] && [ -x "$path" ] || die "cargo did not report where it built $1"
  echo "$path"
}

# random_secret: 48 url-safe characters from the kernel's CSPRNG.
random_secret() {
  head -c 36 /dev/urandom | base64 | tr '+/' '-_' | tr -d '='
}

# start_pebble DIR HTTP_PORT: a local ACME test server (Debian's pebble) and its DNS
# (pebble-challtestsrv) for custom hosts, each on free ports, under DIR. pebble validates HTTP-01
# by connecting to HTTP_PORT (our plain listener) at the address the DNS gives the hostname.
# Debian ships no certificate for pebble's own HTTPS listener: one is made once under a local CA
# ($DIR/ca.pem, which aqs trusts through AQS_ACME_CA_FILE). Sets ACME_PORT, ACME_MGMT_PORT,
# DNS_PORT and DNS_MGMT_PORT.
start_pebble() {
  local dir=$1 http_port=$2
  command -v pebble >/dev/null || apt_install pebble
  command -v openssl >/dev/null || apt_install openssl
  mkdir -p "$dir"
  if [ ! -f "$dir/cert.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj "/CN=AQS local pebble CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
      -keyout "$dir/key.pem" -out "$dir/cert.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$dir/cert.ext"
    openssl x509 -req -in "$dir/cert.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 3650 \
      -extfile "$dir/cert.ext" -out "$dir/cert.pem" 2>/dev/null
  fi
  DNS_PORT=$(free_port); DNS_MGMT_PORT=$(free_port); ACME_PORT=$(free_port); ACME_MGMT_PORT=$(free_port)
  pebble-challtestsrv -defaultIPv4 "" -defaultIPv6 "" -http01 "" -https01 "" -tlsalpn01 "" \
    -dns01 "127.0.0.1:$DNS_PORT" -management "127.0.0.1:$DNS_MGMT_PORT" >"$dir/challtestsrv.log" 2>&1 &
  echo $! > "$dir/challtestsrv.pid"
  cat > "$dir/pebble.json" <<JSON
{"pebble": {"listenAddress": "127.0.0.1:$ACME_PORT", "managementListenAddress": "127.0.0.1:$ACME_MGMT_PORT",
  "certificate": "$dir/cert.pem", "privateKey": "$dir/key.pem", "httpPort": $http_port, "tlsPort": $(free_port),
  "ocspResponderURL": "", "externalAccountBindingRequired": false}}
JSON
  PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 pebble -config "$dir/pebble.json" -dnsserver "127.0.0.1:$DNS_PORT" \
    >"$dir/pebble.log" 2>&1 &
  echo $! > "$dir/pebble.pid"
  wait_for_port "$ACME_PORT" 20 || die "pebble did not start; see $dir/pebble.log"
  wait_for_port "$DNS_MGMT_PORT" 20 || die "pebble-challtestsrv did not start; see $dir/challtestsrv.log"
}

stop_pebble() {
  local dir=$1 name
  for name in pebble challtestsrv; do
    stop_pid "$(cat "$dir/$name.pid" 2>/dev/null || true)"
    rm -f "$dir/$name.pid"
  done
  return 0
}
