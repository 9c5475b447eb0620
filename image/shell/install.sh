#!/bin/sh
# Run once at image build (Dockerfile, sandbox stage) with the names of the image's ENV
# variables: every shell then finds the tools and caches, whatever resets its environment.
set -eu
here=/usr/local/lib/biotool-shell
venv=/opt/venv/bin

# Login shells (bash -l, sh -l, su -, ssh): Debian's /etc/profile resets PATH, then reads
# /etc/profile.d; a value the caller set explicitly still wins.
{
    echo "# biotool sandbox, written at build by $here/install.sh: the image's environment"
    echo "# in login shells (Debian's /etc/profile resets PATH); values already set win."
    for name in "$@"; do
        value=$(printenv "$name")
        if [ "$name" = PATH ]; then
            echo "case \"\${PATH:-}\" in $venv:*) ;; *) PATH=\"$venv:\${PATH:-/usr/local/bin:/usr/bin:/bin}\" ;; esac"
            echo "export PATH"
            # With HOME unset (env -i), ~/.profile's "\$HOME/bin" is /bin, put ahead of the venv.
            echo '[ -n "${HOME:-}" ] || { HOME=$(getent passwd "$(id -u)" | cut -d: -f6); HOME=${HOME:-/tmp}; export HOME; }'
        else
            echo "export $name=\"\${$name:-$value}\""
        fi
    done
    echo ". $here/warn.sh"
} > /etc/profile.d/biotool.sh
chmod 0644 /etc/profile.d/biotool.sh "$here"/*.sh

# Interactive non-login bash (`docker run -it IMAGE`): Debian's bash.bashrc returns early
# for non-interactive shells, so this line runs only when a person or harness is typing.
echo ". $here/warn.sh" >> /etc/bash.bashrc

# Shells started with no PATH (env -i, sudo's secure_path) search /usr/local/bin: the entry
# points are linked there, and python/python3 are the image's Python (a symlink to the venv's
# interpreter would lose the venv, so these are two-line wrappers).
for tool in biotool molperceive; do
    ln -sf "$venv/$tool" "/usr/local/bin/$tool"
done
for py in python python3; do
    printf '#!/bin/sh\nexec %s/%s "$@"\n' "$venv" "$py" > "/usr/local/bin/$py"
    chmod 0755 "/usr/local/bin/$py"
done
