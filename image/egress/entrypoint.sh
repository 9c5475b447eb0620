#!/bin/bash
# Egress start-up: make this run's own CA and a certificate for the allowlisted hosts (the
# sandbox trusts that CA only, read from the shared ca volume), start the gate
# (gatekeeper.py, which ends TLS for those hosts and paces every request host-wide), render
# squid.conf from the rules file and run Squid; both log to this container's stdout. If
# either process ends, the container ends: a proxy without its gate must not linger.
set -euo pipefail

run_dir="${EGRESS_RUN_DIR:-/run/egress}"
ca_dir="${EGRESS_CA_DIR:-/run/egress-ca}"
state_dir="${EGRESS_STATE_DIR:-/var/lib/biotool-egress}"
rules="${BIOTOOL_RULES:-/etc/biotool/rules.toml}"
lib=/usr/local/lib/egress
mkdir -p "$run_dir"
umask 077

mapfile -t hosts < <(python3 "$lib/render.py" --rules "$rules" --hosts)
san=""
for h in "${hosts[@]}"; do san="${san:+$san,}DNS:$h"; done
cd "$run_dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=biotool egress run CA $(hostname)" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign" \
    -keyout ca.key -out ca.pem 2>/dev/null
if [ -n "$san" ]; then
    openssl req -newkey rsa:2048 -nodes -subj "/CN=${hosts[0]}" -keyout host.key -out host.csr 2>/dev/null
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" > host.ext
    openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7 \
        -extfile host.ext -out host.pem 2>/dev/null
fi
rm -f ca.key host.csr
if [ -d "$ca_dir" ] && [ -w "$ca_dir" ]; then
    install -m 0644 ca.pem "$ca_dir/ca.pem.tmp" && mv -f "$ca_dir/ca.pem.tmp" "$ca_dir/ca.pem"
fi

python3 "$lib/render.py" --rules "$rules" --out "$run_dir/squid.conf"
squid -k parse -f "$run_dir/squid.conf" 2>"$run_dir/parse.log" || {
    cat "$run_dir/parse.log" >&2
    echo "egress: rendered squid.conf does not parse" >&2
    exit 2
}

rm -f "$run_dir/ready" "$run_dir/gate-ready"
pids=()
if [ -n "$san" ]; then
    python3 "$lib/gatekeeper.py" --rules "$rules" --cert host.pem --key host.key \
        --state-dir "$state_dir" --extra-ca "${BIOTOOL_EGRESS_EXTRA_CA:-}" \
        --ready-file "$run_dir/gate-ready" --audit "$run_dir/audit.jsonl" &
    pids+=($!)
    for _ in $(seq 100); do [ -e "$run_dir/gate-ready" ] && break; sleep 0.1; done
    [ -e "$run_dir/gate-ready" ] || { echo "egress: the gate did not start" >&2; exit 2; }
fi
squid -N -f "$run_dir/squid.conf" &
pids+=($!)
trap 'kill "${pids[@]}" 2>/dev/null' TERM INT
# The warm-up (from loopback, never an audit record) waits until the relay to the gate
# answers, then creates $run_dir/ready (what the compose healthcheck waits for).
python3 "$lib/render.py" --rules "$rules" --warm-up --ready-file "$run_dir/ready" &
wait -n "${pids[@]}"
status=$?
kill "${pids[@]}" 2>/dev/null || true
echo "egress: a proxy process ended (status $status); stopping" >&2
exit "$status"
