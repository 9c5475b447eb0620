#!/bin/bash
# Egress start-up: make this run's own CA and a certificate for the allowlisted hosts (the
# sandbox trusts that CA only, read from the shared ca volume), start the gate
# (gatekeeper.py and its modules, which end TLS for those hosts and pace every request
# host-wide), render squid.conf from the rules file and run Squid; both log to this
# container's stdout. If either process ends, the container ends: a proxy without its gate
# must not linger, and compose restarts it. The run's state (certificate, RIDs, audit) lives on its own volume,
# so a restart keeps the CA the sandbox trusts, the searches in flight and the audit.
set -euo pipefail

run_dir="${EGRESS_RUN_DIR:-/run/egress}"
ca_dir="${EGRESS_CA_DIR:-/run/egress-ca}"
state_dir="${EGRESS_STATE_DIR:-/var/lib/biotool-egress}"
run_state="${EGRESS_RUN_STATE:-/var/lib/biotool-egress-run}"
rules="${BIOTOOL_RULES:-/etc/biotool/rules.toml}"
lib=/usr/local/lib/egress
# Relay mode (`relay` or EGRESS_MODE=relay): the site's one NCBI relay (relay.py), no Squid.
if [ "${1:-}" = relay ] || [ "${EGRESS_MODE:-}" = relay ]; then
    [ "${1:-}" = relay ] && shift
    # No --upstream unless set: NCBI's Blast.cgi is relay.py's default, written there only.
    upstream=()
    [ -n "${EGRESS_RELAY_UPSTREAM:-}" ] && upstream=(--upstream "$EGRESS_RELAY_UPSTREAM")
    exec python3 "$lib/relay.py" --tls "${EGRESS_RELAY_TLS:-/etc/biotool/relay}" \
        --state-dir "$state_dir" --listen "0.0.0.0:${EGRESS_RELAY_PORT:-8443}" \
        "${upstream[@]}" --extra-ca "${BIOTOOL_EGRESS_EXTRA_CA:-}" "$@"
fi
mkdir -p "$run_dir"
umask 077

python3 "$lib/render.py" --rules "$rules" --out "$run_dir/squid.conf" --hosts > "$run_dir/hosts" || {
    echo "egress: the rules do not render" >&2
    exit 2
}
mapfile -t hosts < "$run_dir/hosts"
san=""
for h in "${hosts[@]}"; do san="${san:+$san,}DNS:$h"; done
mkdir -p "$run_state"
cd "$run_state"
# A certificate given to the egress (Kubernetes: the namespace's Secret from k8s/tls.sh,
# since pods cannot share the volume compose hands ca.pem over on) replaces the minted one.
if [ -n "${EGRESS_TLS_DIR:-}" ]; then
    for f in ca.pem host.pem host.key; do
        [ -s "$EGRESS_TLS_DIR/$f" ] || { echo "egress: EGRESS_TLS_DIR has no $f" >&2; exit 2; }
        install -m 0600 "$EGRESS_TLS_DIR/$f" "$run_state/$f"
    done
fi
# A restart of this run reuses its certificate: a new CA would break every TLS session the
# sandbox starts against the CA it already trusts.
if [ ! -s ca.pem ] || { [ -n "$san" ] && { [ ! -s host.pem ] || [ ! -s host.key ]; }; }; then
    rm -f ca.pem host.pem host.key rids.json
    # P-256 keys: made in milliseconds where RSA 2048 takes most of a second of every start.
    ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
    openssl req -x509 "${ec[@]}" -nodes -days 7 -subj "/CN=biotool egress run CA $(hostname)" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign" \
        -keyout ca.key -out ca.pem 2>/dev/null
    if [ -n "$san" ]; then
        openssl req "${ec[@]}" -nodes -subj "/CN=${hosts[0]}" -keyout host.key -out host.csr 2>/dev/null
        printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" > host.ext
        openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7 \
            -extfile host.ext -out host.pem 2>/dev/null
    fi
    rm -f ca.key ca.srl host.csr host.ext
fi
cd "$run_dir"
if [ -d "$ca_dir" ] && [ -w "$ca_dir" ]; then
    install -m 0644 "$run_state/ca.pem" "$ca_dir/ca.pem.tmp" && mv -f "$ca_dir/ca.pem.tmp" "$ca_dir/ca.pem"
fi

# No separate `squid -k parse`: Squid refuses a bad squid.conf with its own FATAL line, and
# its ending ends the container below.
rm -f "$run_dir/ready" "$run_dir/gate-ready"
pids=()
if [ -n "$san" ]; then
    python3 "$lib/gatekeeper.py" --rules "$rules" --cert "$run_state/host.pem" \
        --key "$run_state/host.key" --state-dir "$state_dir" \
        --extra-ca "${BIOTOOL_EGRESS_EXTRA_CA:-}" --ready-file "$run_dir/gate-ready" \
        --audit "$run_state/audit.jsonl" --run-state "$run_state" &
    pids+=($!)
    # Squid only after the gate listens: a peer it finds down at start is probed again a
    # second later, which every episode would wait for.
    # Until it listens or dies: a loaded host may take seconds to import it; 120 s only stops
    # a gate that hangs.
    for _ in $(seq 2400); do
        [ -e "$run_dir/gate-ready" ] && break
        kill -0 "${pids[0]}" 2>/dev/null || break
        sleep 0.05
    done
    [ -e "$run_dir/gate-ready" ] || { echo "egress: the gate did not start" >&2; exit 2; }
fi
if [ -n "$san" ]; then
    # Squid's cache.log (stderr) through squidlog.py's filter: each connection closed at
    # accept for the per-client cap is then a record in the run's store too.
    squid -N -f "$run_dir/squid.conf" 2> >(python3 "$lib/squidlog.py" --warnings) &
else
    squid -N -f "$run_dir/squid.conf" &
fi
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
