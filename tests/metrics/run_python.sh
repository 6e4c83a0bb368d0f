#!/usr/bin/env bash
# run_python.sh SCRIPT ARGS...: runs SCRIPT with the first Python 3 that has
# prometheus_client (Debian's python3-prometheus-client lands in the
# system's interpreter, which a pyenv python3 on PATH does not see); exits
# 77 (skipped) when none has it.
for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null 2>&1 &&
        "$py" -c 'import prometheus_client.parser' 2>/dev/null; then
        exec "$py" "$@"
    fi
done
echo "run_python: no python3 with prometheus_client (apt install python3-prometheus-client): skipped"
exit 77
