# biotool sandbox: an interactive shell says once, on one line, when this container's network
# is not enforced (sourced from /etc/profile.d/biotool.sh and /etc/bash.bashrc).
case $- in
    *i*)
        if [ -z "${BIOTOOL_ENFORCEMENT_CHECKED:-}" ]; then
            BIOTOOL_ENFORCEMENT_CHECKED=1
            export BIOTOOL_ENFORCEMENT_CHECKED
            /opt/venv/bin/python -m biotool.system.enforcement --warn || true
        fi
        ;;
esac
