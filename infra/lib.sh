# Shared by every script of infra/: installing and starting private Redis and PostgreSQL instances
# under a state folder, each on a free port; starting `aqs` on them (start_aqs) and seeding it
# through its API (seed_instance); reading JSON (json_get).
# shellcheck shell=bash

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root to run: $*"; fi
}

# What apt_install waits for and runs. The defaults are the system's; a test points them
# elsewhere: AQS_APT_LOCKS (the lock files, space-separated), AQS_APT_GET (a command run instead
# of `apt-get` as root), AQS_APT_LOCK_TIMEOUT (the longest wait for the locks, in seconds).
APT_LOCKS=${AQS_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}
APT_LOCK_TIMEOUT=${AQS_APT_LOCK_TIMEOUT:-900}
APT_UPDATED=""

# apt_lock_holders: names each lock file of APT_LOCKS some process holds, with that process
# ("unattended-upgr (pid 812) holds /var/lib/dpkg/lock-frontend"), read from /proc/locks, which
# lists the POSIX locks apt and dpkg take as well as flock(1)'s; prints nothing when all are free.
apt_lock_holders() {
  local lock inode pid name out=""
  for lock in $APT_LOCKS; do
    [ -e "$lock" ] || continue
    inode=$(stat -c %i "$lock") || continue
    # A line is "1: POSIX  ADVISORY  WRITE 812 fe:00:770190 0 EOF" ("1: -> …" for a waiter): the
    # pid comes just before "major:minor:inode".
    while read -r pid; do
      name=$(cat "/proc/$pid/comm" 2>/dev/null || echo "a process")
      out+="${out:+; }$name (pid $pid) holds $lock"
    done < <(awk -v inode="$inode" '$2 != "->" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9a-f]+:[0-9a-f]+:[0-9]+$/) {
        n = split($i, f, ":"); if (f[n] == inode) print $(i - 1); break } }' /proc/locks 2>/dev/null | sort -u)
  done
  [ -z "$out" ] || echo "$out"
}

# apt_wait_for_locks: returns once no other apt or dpkg holds a lock apt_install needs (as on a
# fresh cloud machine running unattended upgrades), saying that it waits and for whom; dies after
# APT_LOCK_TIMEOUT seconds.
apt_wait_for_locks() {
  local holders said="" deadline=$(( SECONDS + APT_LOCK_TIMEOUT ))
  while holders=$(apt_lock_holders) && [ -n "$holders" ]; do
    if [ -z "$said" ]; then
      log "waiting for another apt/dpkg to finish: $holders (up to $APT_LOCK_TIMEOUT s)"
      said=1
    fi
    [ $SECONDS -lt $deadline ] || die "apt/dpkg is still busy after $APT_LOCK_TIMEOUT s ($holders); run this again once it is done"
    sleep 1
  done
  [ -z "$said" ] || log "apt/dpkg is free again"
}

# apt_get ARGS...: apt-get as root, told to wait for its locks too (should another apt take one
# between apt_wait_for_locks and its start).
apt_get() {
  local wait=(-o "DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT")
  if [ -n "${AQS_APT_GET:-}" ]; then
    DEBIAN_FRONTEND=noninteractive "$AQS_APT_GET" "${wait[@]}" "$@"
  else
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" "$@"
  fi
}

# apt_install PKG...: installs Debian packages that are missing, saying so; waits while another
# apt or dpkg runs.
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing from the distribution's packages: ${missing[*]}"
  if [ -z "$APT_UPDATED" ]; then
    apt_wait_for_locks
    apt_get update -qq >&2 || die "apt-get update failed (see above)"
    APT_UPDATED=1
  fi
  apt_wait_for_locks
  apt_get install -y -qq --no-install-recommends "${missing[@]}" >&2 || die "could not install ${missing[*]} (see above)"
}

pg_bin() {
  local dir
  dir=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  [ -d "$dir" ] || die "PostgreSQL binaries not found under /usr/lib/postgresql"
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

# addr_taken HOST:PORT: true when something accepts connections there (a wildcard host is asked
# on the loopback address).
addr_taken() {
  local host=${1%:*} port=${1##*:}
  host=${host#[}; host=${host%]}
  case "$host" in "" | 0.0.0.0 | "*") host=127.0.0.1 ;; ::) host=::1 ;; esac
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# choose_addr VAR DEFAULT WHAT: the listen address in VAR. Set (even to DEFAULT), it is kept as it
# is, and taken it is an error: a second server would fail to bind while the first answered in
# its place. Unset, it is DEFAULT, or a free port on the same host when DEFAULT is taken (a
# second infra/up), which is said. Set to empty, WHAT is off. Exports VAR.
choose_addr() {
  local var=$1 default=$2 what=$3 addr
  if [ -n "${!var+set}" ]; then
    addr=${!var}
    if [ -n "$addr" ] && addr_taken "$addr"; then
      die "$var=$addr is already in use (another infra/up?): stop what listens there, set $var to another address, or unset it to let infra/up pick a free port"
    fi
  else
    addr=$default
    if addr_taken "$addr"; then
      addr="${default%:*}:$(free_port)"
      log "$default is taken (another infra/up?): $what on $addr instead"
    fi
  fi
  export "$var=$addr"
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
  local dir=$1
  mkdir -p "$dir"
  REDIS_PORT=$(cat "$dir/port" 2>/dev/null || true)
  for _ in 1 2 3; do
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
  # shellcheck disable=SC2034 # for the caller
  PG_HOME=$dir
  [ "$dir" = "$1" ] || log "the postgres user cannot enter $1; PostgreSQL keeps its data in $dir"
  [ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    "${run[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || die "initdb failed; see $dir/initdb.log"
  fi
  PG_PORT=$(cat "$dir/port" 2>/dev/null || true)
  local started=""
  for _ in 1 2 3; do
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

# require_json: json_get reads JSON with python3 (Debian 12's minimal images have neither python3
# nor jq): installs it when missing. Call it once early, outside a command substitution, so that
# apt's output and questions reach the terminal.
require_json() {
  command -v python3 >/dev/null || apt_install python3
}

# json_get PATH: reads one JSON document on stdin and prints the value at PATH, a dotted path
# (`queue.slug`, `messages.0.receipt`): a string as it is, anything else as JSON. Dies, naming the
# path and the start of the document, when the document does not parse or has no such value, or
# it is null.
json_get() {
  local doc
  doc=$(cat)
  command -v python3 >/dev/null || die "json_get needs python3 (call require_json first)"
  python3 -c 'import json, sys
value = json.loads(sys.stdin.read())
for key in sys.argv[1].split("."):
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        value = value[int(key)]
    elif isinstance(value, dict) and key in value:
        value = value[key]
    else:
        sys.exit(1)
if value is None:
    sys.exit(1)
print(value if isinstance(value, str) else json.dumps(value))' "$1" <<<"$doc" 2>/dev/null \
    || die "no $1 in this JSON: ${doc:0:400}"
}

# api_call METHOD URL BEARER [JSON]: calls an AQS API and prints the answer's body. BEARER may be
# empty (no Authorization header); JSON, when given, is sent as the body. Dies with the status and
# the body on anything but a 2xx, and when the server cannot be reached.
api_call() {
  local method=$1 url=$2 bearer=$3 args answer status body
  args=(-sS -X "$method" -w '\n%{http_code}' "$url")
  [ -z "$bearer" ] || args+=(-H "Authorization: Bearer $bearer")
  [ $# -lt 4 ] || args+=(-H 'Content-Type: application/json' -d "$4")
  answer=$(curl "${args[@]}") || die "$method $url: no answer (curl's error is above)"
  status=${answer##*$'\n'}
  body=${answer%$'\n'*}
  case "$status" in
    2??) printf '%s' "$body" ;;
    *) die "$method $url answered $status: ${body:0:400}" ;;
  esac
}

# start_aqs AQS LOG HEALTH_URL SECONDS [tee]: applies the migrations (`AQS migrate`), then starts
# `AQS serve` in the background with the AQS_* settings of the environment, both writing to LOG
# (and to the terminal as well with `tee`), and waits until HEALTH_URL answers 2xx. Sets AQS_PID.
# Dies with the log's tail when the migrations fail, the server exits first or SECONDS pass.
start_aqs() {
  local aqs=$1 logfile=$2 url=$3 secs=$4 tee=${5:-}
  if [ "$tee" = tee ]; then
    "$aqs" migrate 2>&1 | tee "$logfile" || die "aqs migrate failed (above; log: $logfile)"
    "$aqs" serve > >(tee -a "$logfile") 2>&1 &
  else
    "$aqs" migrate >"$logfile" 2>&1 || { tail -n 40 "$logfile" >&2; die "aqs migrate failed (log: $logfile)"; }
    "$aqs" serve >>"$logfile" 2>&1 &
  fi
  AQS_PID=$!
  wait_for_health "$url" "$AQS_PID" "$logfile" "$secs"
}

# create_queue BASE SESSION JSON: creates a queue through the management API at BASE (the
# service's origin) with the member's SESSION; JSON is the request (`{"name":"jobs"}`). Sets
# CREATED_SLUG, CREATED_ID and CREATED_TOKEN (the queue's first token, every scope).
create_queue() {
  local created
  created=$(api_call POST "$1/api/v1/queues" "$2" "$3")
  CREATED_SLUG=$(json_get queue.slug <<<"$created")
  CREATED_ID=$(json_get queue.id <<<"$created")
  CREATED_TOKEN=$(json_get token.secret <<<"$created")
}

# seed_instance BASE EMAIL PASSWORD QUEUE_JSON: seeds a running instance through its management
# API: signs a member up, then creates one queue (QUEUE_JSON, as create_queue takes it). Sets
# SEED_SESSION, SEED_SLUG, SEED_QUEUE_ID and SEED_TOKEN (the queue's first token, every scope).
# Dies naming the step that failed and the server's answer.
seed_instance() {
  local base=$1 email=$2 password=$3 queue=$4 signed_up
  signed_up=$(api_call POST "$base/api/v1/auth/signup" "" "{\"email\":\"$email\",\"password\":\"$password\"}")
  SEED_SESSION=$(json_get session <<<"$signed_up")
  create_queue "$base" "$SEED_SESSION" "$queue"
  # shellcheck disable=SC2034 # for the caller
  SEED_SLUG=$CREATED_SLUG SEED_QUEUE_ID=$CREATED_ID SEED_TOKEN=$CREATED_TOKEN
}

# require_rust: dies unless rustc is at least the version the workspace needs: Cargo.toml's
# rust-version, or a later one a locked dependency asks for (cargo tells offline once the
# dependencies are downloaded; otherwise the build says so itself). Names what it found.
require_rust() {
  if ! command -v cargo >/dev/null || ! command -v rustc >/dev/null; then
    die "Rust is required: install it with rustup (https://rustup.rs); Debian's own rustc is too old for this workspace"
  fi
  local found need deps host
  found=$(rustc --version | sed -n 's/^rustc \([0-9][0-9.]*\).*/\1/p')
  need=$(sed -n 's/^rust-version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
  host=$(rustc -vV | sed -n 's/^host: //p')
  deps=$(cargo metadata --format-version 1 --locked --offline --filter-platform "$host" 2>/dev/null \
    | grep -o '"rust_version":"[^"]*"' | sed 's/.*:"\(.*\)"/\1/' | sort -V | tail -n 1 || true)
  if [ -n "$deps" ] && version_lt "$need" "$deps"; then need=$deps; fi
  [ -n "$found" ] || die "cannot tell the version of $(command -v rustc) ($(rustc --version 2>&1 | head -n 1))"
  if [ -n "$need" ] && version_lt "$found" "$need"; then
    die "this workspace needs Rust $need or later; $(command -v rustc) is $found. Update it with \`rustup update\` (without rustup, install it from https://rustup.rs: Debian's own rustc is too old)"
  fi
}

# version_lt A B: true when version A is older than B (1.88 and 1.88.0 are the same).
version_lt() {
  local a b
  a=$(version_norm "$1"); b=$(version_norm "$2")
  [ "$a" != "$b" ] && [ "$(printf '%s\n%s\n' "$a" "$b" | sort -V | head -n 1)" = "$a" ]
}

version_norm() {
  local major minor patch
  IFS=. read -r major minor patch _ <<<"$1"
  echo "${major:-0}.${minor:-0}.${patch:-0}"
}

# artifact_path NAME: reads cargo's JSON messages on stdin and prints where binary NAME was built
# (not a test harness of it).
artifact_path() {
  grep '"reason":"compiler-artifact"' | grep -F '"kind":["bin"]' | grep -F "\"name\":\"$1\"" \
    | grep -F '"test":false' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1
}

# cargo_build_bin NAME: builds binary NAME in release mode and prints its path, wherever cargo
# puts it (CARGO_TARGET_DIR, build.target-dir): cargo says so itself in its JSON messages.
cargo_build_bin() {
  local json path
  json=$(cargo build --release --locked --bin "$1" --message-format=json-render-diagnostics) \
    || die "the build of $1 failed (cargo's errors are above; if they name a rustc version, run \`rustup update\`)"
  path=$(printf '%s\n' "$json" | artifact_path "$1")
  [ -x "$path" ] || die "cargo did not report where it built $1"
  echo "$path"
}

# cargo_test_bin NAME: builds every test of the workspace, as `cargo test --workspace` does (so
# infra/test's own run rebuilds nothing), which builds binary NAME in debug mode for the
# end-to-end tests, and prints that binary's path as cargo reports it.
cargo_test_bin() {
  local json path
  json=$(cargo test --workspace --locked --no-run --message-format=json-render-diagnostics) \
    || die "the test build failed (cargo's errors are above)"
  path=$(printf '%s\n' "$json" | artifact_path "$1")
  [ -x "$path" ] || die "cargo did not report where it built $1"
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

# dns_record KIND JSON: sets a record (add-a, set-cname, set-txt…) in the local DNS start_pebble
# started.
dns_record() {
  curl -fsS -X POST "http://127.0.0.1:$DNS_MGMT_PORT/$1" -d "$2" >/dev/null \
    || die "could not set a record in the local DNS (POST /$1 $2)"
}

stop_pebble() {
  local dir=$1 name
  for name in pebble challtestsrv; do
    stop_pid "$(cat "$dir/$name.pid" 2>/dev/null || true)"
    rm -f "$dir/$name.pid"
  done
  return 0
}
