# Sourced by the scripts that need a Debian mirror (image/base/build.sh,
# image/runtime/install-runsc.sh): the mirrors this host's apt already uses, never a name
# written here.

apt_uri() {  # apt_uri SUITE: the first URI serving SUITE in this host's apt sources
    local suite="$1" f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && awk -v s="$suite" '
            /^URIs:/ {u=$2} /^Suites:/ {for (i = 2; i <= NF; i++) if ($i == s) {print u; exit}}
            /^$/ {u=""}' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] && awk -v s="$suite" '$1 == "deb" {
            for (i = 2; i <= NF; i++) if ($i !~ /^\[/) {if ($(i+1) == s) print $i; break}}' "$f"
    done
    return 0  # a missing sources file is no error: under set -e and pipefail it would end the build silently
}
