#!/usr/bin/env bash
# nginx on 127.0.0.1 for the end-to-end benchmarks against a server we did not write (issue 17).
#
#   Benchmarks/Scripts/nginx.sh start    # installs nginx from Debian if missing, starts it, prints its URL
#   Benchmarks/Scripts/nginx.sh url      # prints the URL of the running server
#   Benchmarks/Scripts/nginx.sh stop     # stops it (and nothing else)
#
# Typical use, from Benchmarks/:
#
#   export COURIER_NGINX_URL=$(Scripts/nginx.sh start)
#   swift package --disable-sandbox benchmark --filter "Loopback nginx.*"
#   Scripts/nginx.sh stop
#
# Everything nginx reads or writes lives in one folder, $COURIER_NGINX_DIR (default: $TMPDIR/courier-nginx):
# its configuration, pid file, error log, temp folders and a file `url`. No system configuration is read or
# changed. One worker process, keep-alive connections kept for a million requests, no access log; it listens
# on 127.0.0.1 only, on a port that was free when it started, and answers GET /items with a 130-byte JSON body
# and 13 response header fields (Server, Date, Content-Type, Content-Length, Connection, and 8 added below).
set -euo pipefail

dir=${COURIER_NGINX_DIR:-${TMPDIR:-/tmp}/courier-nginx}

log() { echo "nginx.sh: $*" >&2; }

find_nginx() {
    local candidate
    for candidate in "$(command -v nginx 2>/dev/null || true)" /usr/sbin/nginx /usr/local/sbin/nginx; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

install_nginx() {
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
    log "nginx is not installed; installing it from Debian (apt-get install nginx)"
    "${sudo[@]}" apt-get update -qq >&2
    # Debian packages may try to start their service on port 80; where a policy-rc.d forbids it (containers)
    # nothing starts. Either way the system service is not what the benchmarks use.
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends nginx >&2
}

free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
        return
    fi
    local port
    for _ in $(seq 1 50); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
    log "no free port found"
    return 1
}

running_pid() {
    [ -f "$dir/nginx.pid" ] || return 1
    local pid
    pid=$(cat "$dir/nginx.pid")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

write_config() {
    local port=$1
    mkdir -p "$dir/temp"
    cat >"$dir/nginx.conf" <<EOF
# Written by Benchmarks/Scripts/nginx.sh; rewritten on every start.
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;

events {
    worker_connections 1024;
}

http {
    access_log off;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    client_body_temp_path $dir/temp/client_body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;

    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        default_type application/json;
        charset utf-8;
        charset_types application/json;

        # What a typical JSON API sends with a small list: caching and validators, a request id, HSTS, rate
        # limits and content sniffing protection.
        location = /items {
            add_header Cache-Control "private, max-age=0, must-revalidate" always;
            add_header ETag "\"5d8c72a5edda8d6a\"" always;
            add_header Vary "Accept, Accept-Encoding, Authorization" always;
            add_header X-Request-ID \$request_id always;
            add_header Strict-Transport-Security "max-age=31536000; includeSubDomains" always;
            add_header X-RateLimit-Limit "5000" always;
            add_header X-RateLimit-Remaining "4987" always;
            add_header X-Content-Type-Options "nosniff" always;
            return 200 '{"items":[{"id":1,"name":"Ada Lovelace","role":"admin"},{"id":2,"name":"Grace Hopper","role":"maintainer"}],"total":2,"next":null}';
        }

        location / {
            return 404;
        }
    }
}
EOF
}

start() {
    local nginx pid port url
    if pid=$(running_pid); then
        log "already running (pid $pid); stop it first"
        cat "$dir/url"
        return 0
    fi
    nginx=$(find_nginx) || {
        install_nginx
        nginx=$(find_nginx)
    }
    port=$(free_port)
    write_config "$port"
    # -e: the error log before the configuration is read (Debian's built-in default is /var/log/nginx).
    "$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -t -q
    "$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    url="http://127.0.0.1:$port/items"
    for _ in $(seq 1 50); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$url" >"$dir/url"
            log "$("$nginx" -v 2>&1) running (pid $(cat "$dir/nginx.pid")), $url"
            echo "$url"
            return 0
        fi
        sleep 0.1
    done
    log "nginx did not start listening on $port; see $dir/error.log"
    return 1
}

stop() {
    local pid
    if ! pid=$(running_pid); then
        log "not running"
        rm -f "$dir/url"
        return 0
    fi
    kill -QUIT "$pid"
    for _ in $(seq 1 50); do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$dir/url"
            log "stopped (pid $pid)"
            return 0
        fi
        sleep 0.1
    done
    log "pid $pid did not quit in 5 s; sending TERM"
    kill -TERM "$pid"
    rm -f "$dir/url"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) if running_pid >/dev/null; then cat "$dir/url"; else log "not running"; exit 1; fi ;;
    *)
        echo "usage: $0 start|stop|url" >&2
        exit 2
        ;;
esac
