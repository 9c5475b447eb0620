#!/bin/sh
# Egress proxy start-up: render squid.conf from the rules file, make a throw-away TLS
# certificate (Squid's loopback-only ssl-bump port needs one to peek at the SNI; it never
# decrypts), then run Squid in the foreground so its access log is this container's stdout.
set -eu

run_dir="${EGRESS_RUN_DIR:-/run/egress}"
rules="${BIOTOOL_RULES:-/etc/biotool/rules.toml}"
lib=/usr/local/lib/egress
mkdir -p "$run_dir"
umask 077

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=biotool egress proxy - destination not on the sandbox allowlist" \
    -keyout "$run_dir/bump.key" -out "$run_dir/bump.pem" 2>/dev/null

python3 "$lib/render.py" --rules "$rules" --out "$run_dir/squid.conf" \
    --cert "$run_dir/bump.pem" --key "$run_dir/bump.key"

squid -k parse -f "$run_dir/squid.conf" 2>"$run_dir/parse.log" || {
    cat "$run_dir/parse.log" >&2
    echo "egress: rendered squid.conf does not parse" >&2
    exit 2
}
# Squid marks its relay to the SNI port down until a probe succeeds, and its start-up probe
# runs before that port listens: the warm-up (from loopback, never an audit record) brings
# it up, then creates $run_dir/ready (what the compose healthcheck can wait for).
rm -f "$run_dir/ready"
python3 "$lib/render.py" --rules "$rules" --warm-up --ready-file "$run_dir/ready" &
exec squid -N -f "$run_dir/squid.conf"
