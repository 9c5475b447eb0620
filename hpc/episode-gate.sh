# An Apptainer episode's own egress gate, sourced by hpc/run-apptainer.sh when
# BIOTOOL_NCBI_RELAY is set (docs/hpc.md, "Remote BLAST from an Apptainer episode").
#
#   episode (--net --network none)      gate: egress SIF (--net --network none)         node
#   biotool -> 127.0.0.1:3128 pipe ---> agent/proxy.sock -> pipe -> Squid -> gatekeeper
#                                        gatekeeper -> relay host:port on its lo -> pipe ->
#                                        relay/relay.sock ---------------------------------> pipe -> the relay
#
# Both run with no network at all; the only ways between them and out are UNIX sockets in a
# folder of the job's user (mode 0700, so no other user of the node reaches them), and the
# node-side pipe connects only to the relay's configured address (mutual TLS end to end,
# gate to relay). The gate is the egress image run from BIOTOOL_EGRESS_SIF as the job's user,
# its state in that folder; its audit becomes $BIOTOOL_EPISODE_DIR/audit.json.

# The gate's log (Squid's lines, the gate's start-up) is kept to its first 8 MB, as docker caps
# a container's: the audit's records are in the gate's own bounded store.
gate_log_max=8000000

gate_fail() {  # one line naming the culprit; 2: bad input, 4: the gate or its audit failed
    echo "run-apptainer: $1" >&2
    exit "$2"
}

# Checks the settings and starts the gate; sets episode_gate (the episode's binds) and
# episode_env (its proxy and CA variables).
gate_up() {
    local relay=$BIOTOOL_NCBI_RELAY tls=${BIOTOOL_NCBI_RELAY_TLS:-} sif=${BIOTOOL_EGRESS_SIF:-}
    [[ $relay =~ ^https://([A-Za-z0-9][A-Za-z0-9.-]*)(:([0-9]{1,5}))?/?$ ]] \
        || gate_fail "BIOTOOL_NCBI_RELAY=$relay is not https://HOST[:PORT]" 2
    relay_host=${BASH_REMATCH[1]} relay_port=${BASH_REMATCH[3]:-8443}
    [[ -n $tls ]] || gate_fail "BIOTOOL_NCBI_RELAY_TLS is not set: the folder of the gate's site-ca.pem, client.pem and client.key" 2
    local f
    for f in site-ca.pem client.pem client.key; do
        [[ -r $tls/$f ]] || gate_fail "BIOTOOL_NCBI_RELAY_TLS ($tls) has no readable $f" 2
    done
    [[ -f $sif ]] || gate_fail "BIOTOOL_EGRESS_SIF (${sif:-not set}) is not a file: build it with make egress-sif or copy one in" 2
    gate_dir=$(mktemp -d "${BIOTOOL_EPISODE_TMP:-${TMPDIR:-/tmp}}/biotool-gate.XXXXXX")
    mkdir "$gate_dir"/{agent,relay,ca,run,state,schedule}
    # The relay's name is the gate's own loopback, where its pipe to relay.sock listens.
    printf '127.0.0.1 localhost %s\n' "$relay_host" > "$gate_dir/hosts"
    python3 "$here/socketpipe.py" --listen "unix:$gate_dir/relay/relay.sock" \
        --connect "tcp:$relay_host:$relay_port" 2>> "$gate_dir/pipe.log" &
    pipe_pid=$!
    local lib=/usr/local/lib/biotool-hpc
    apptainer --quiet exec --containall --net --network none \
        --bind "$gate_dir/run:/run/egress" --bind "$gate_dir/ca:/run/egress-ca" \
        --bind "$gate_dir/state:/var/lib/biotool-egress-run" \
        --bind "$gate_dir/schedule:/var/lib/biotool-egress" \
        --bind "$tls:/etc/biotool/relay-client:ro" --bind "$gate_dir/hosts:/etc/hosts:ro" \
        --bind "$gate_dir/agent:/run/biotool-hpc" --bind "$gate_dir/relay:/run/biotool-relay" \
        --bind "$here/socketpipe.py:$lib/socketpipe.py:ro" "$sif" \
        /usr/bin/env BIOTOOL_NCBI_RELAY="$relay" BIOTOOL_NCBI_RELAY_TLS=/etc/biotool/relay-client \
        bash -c "python3 $lib/socketpipe.py --listen tcp:127.0.0.1:$relay_port --connect unix:/run/biotool-relay/relay.sock &
                 python3 $lib/socketpipe.py --listen unix:/run/biotool-hpc/proxy.sock --connect tcp:127.0.0.1:3128 --source 127.0.0.2 &
                 exec /usr/local/lib/egress/entrypoint.sh" \
        > >({ head -c "$gate_log_max"; cat > /dev/null; } > "$gate_dir/gate.log") 2>&1 &
    gate_pid=$!
    # Ready once Squid's relay to the gate answers (the entrypoint's own ready file); 120 s
    # only stops a gate that hangs on a loaded node.
    local waited=0
    until [[ -e $gate_dir/run/ready && -S $gate_dir/agent/proxy.sock ]]; do
        kill -0 "$gate_pid" 2>/dev/null && (( waited++ < 1200 )) \
            || gate_fail "the episode's egress gate did not start: $(tail -n 1 "$gate_dir/gate.log")" 4
        sleep 0.1
    done
    episode_gate=(--bind "$gate_dir/agent:/run/biotool-hpc" --bind "$gate_dir/ca:/run/biotool-egress-ca:ro"
                  --bind "$here/socketpipe.py:$lib/socketpipe.py:ro")
    local ca=/run/biotool-egress-ca/ca.pem proxy=http://127.0.0.1:3128
    episode_env=(HTTPS_PROXY=$proxy https_proxy=$proxy HTTP_PROXY=$proxy http_proxy=$proxy
                 SSL_CERT_FILE=$ca CURL_CA_BUNDLE=$ca REQUESTS_CA_BUNDLE=$ca)
    # Inside the episode, before the line: the pipe from the proxy's address to the socket.
    episode_pipe="python3 $lib/socketpipe.py --listen tcp:127.0.0.1:3128 --connect unix:/run/biotool-hpc/proxy.sock --ready-file /tmp/.biotool-proxy &
        for _ in \$(seq 200); do [ -e /tmp/.biotool-proxy ] && break; sleep 0.05; done"
}

# On every exit: the gate stopped (its store flushed), the audit kept, the folder removed;
# an audit that cannot be read fails the episode (exit 4) and its folder is kept.
gate_down() {
    local status=$? waited=0
    if [[ -n ${gate_pid:-} ]]; then
        kill -TERM "$gate_pid" 2>/dev/null || true
        while kill -0 "$gate_pid" 2>/dev/null && (( waited++ < 150 )); do sleep 0.1; done
        kill -KILL "$gate_pid" 2>/dev/null || true
    fi
    if [[ -n ${pipe_pid:-} ]]; then kill "$pipe_pid" 2>/dev/null || true; fi
    [[ -n ${gate_dir:-} ]] || exit "$status"
    if [[ -n ${episode_gate:-} && -n ${BIOTOOL_EPISODE_DIR:-} ]]; then  # the gate had started
        local out=$BIOTOOL_EPISODE_DIR/audit.json
        if PYTHONPATH="$here/../entrypoints" python3 -m biotool_sandbox.audit "$gate_dir/state" \
                "$gate_dir/gate.log" > "$out.part"; then
            mv -- "$out.part" "$out"
        else
            rm -f -- "$out.part"
            echo "run-apptainer: the episode gate's audit could not be read; its folder $gate_dir is kept" >&2
            exit 4
        fi
    fi
    rm -rf -- "$gate_dir"
    exit "$status"
}
