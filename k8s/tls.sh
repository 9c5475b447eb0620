#!/bin/bash
# The egress TLS material of one namespace, as Kubernetes objects on stdout:
#   Secret biotool-egress-tls   ca.pem, host.pem, host.key   mounted in egress pods only
#   ConfigMap biotool-egress-ca ca.pem                        mounted in sandbox pods
# On Docker each run's egress mints its own CA and hands ca.pem to its sandbox on a shared
# volume; pods cannot share a volume, so here one CA per namespace is minted once, its key
# discarded, and the egress image takes the certificate it is given (EGRESS_TLS_DIR).
#   k8s/tls.sh | kubectl apply -n NAMESPACE -f -          (again to rotate; BIOTOOL_TLS_DAYS)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
rules="${BIOTOOL_RULES:-$here/image/rules.toml}"
days="${BIOTOOL_TLS_DAYS:-30}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
umask 077

# The certificate names the allowlisted hosts, read from the rules as the egress reads them.
mapfile -t hosts < <(python3 "$here/image/egress/render.py" --rules "$rules" --hosts)
[ "${#hosts[@]}" -gt 0 ] || { echo "tls.sh: the rules allow no host" >&2; exit 2; }
san=""
for h in "${hosts[@]}"; do san="${san:+$san,}DNS:$h"; done

cd "$work"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
openssl req -x509 "${ec[@]}" -nodes -days "$days" -subj "/CN=biotool egress namespace CA" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign" \
    -keyout ca.key -out ca.pem 2>/dev/null
openssl req "${ec[@]}" -nodes -subj "/CN=${hosts[0]}" -keyout host.key -out host.csr 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" > host.ext
openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile host.ext -out host.pem 2>/dev/null
rm -f ca.key ca.srl   # no one can sign for these hosts again

b64() { base64 -w0 < "$1"; }
indent() { sed 's/^/    /' "$1"; }
cat <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: biotool-egress-tls
type: Opaque
data:
  ca.pem: $(b64 ca.pem)
  host.pem: $(b64 host.pem)
  host.key: $(b64 host.key)
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: biotool-egress-ca
data:
  ca.pem: |
$(indent ca.pem)
EOF
