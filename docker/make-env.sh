#!/usr/bin/env bash
# Replaces every "change-me..." value in an env file (default .env) with a fresh random one:
# hex strings for passwords and secrets, a Fernet key for AIRFLOW_FERNET_KEY. Prints only the
# names it set, never the values. Usage: bash docker/make-env.sh [.env]
set -euo pipefail
file=${1:-.env}
[ -f "$file" ] || { echo "make-env: $file not found (cp .env.example $file first)" >&2; exit 2; }
python3 - "$file" <<'PY'
import base64, os, re, secrets, sys
path = sys.argv[1]
out, changed = [], []
for line in open(path).read().splitlines():
    m = re.match(r"^([A-Z0-9_]+)=change-me", line)
    if m:
        name = m.group(1)
        value = (base64.urlsafe_b64encode(os.urandom(32)).decode() if name == "AIRFLOW_FERNET_KEY"
                 else secrets.token_hex(24))
        line = f"{name}={value}"
        changed.append(name)
    out.append(line)
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
os.chmod(path, 0o600)
print("make-env: set " + (", ".join(changed) if changed else "nothing (no change-me values left)"))
PY
