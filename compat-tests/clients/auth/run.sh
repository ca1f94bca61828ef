#!/usr/bin/env bash
# Runs the authentication scripts against a docgrid started with `--auth` and the root user
# root/example (`--admin-user root --admin-password example`).
# Usage: run.sh HOST:PORT CLIENTS_DIR   (as ../run.sh)
set -euo pipefail
host=$1
clients=$2
here=$(cd "$(dirname "$0")" && pwd)
echo "-- mongosh auth.js (--username/--password)"
"$clients/node_modules/.bin/mongosh" --quiet "mongodb://$host/" \
  --username root --password example --authenticationDatabase admin --file "$here/auth.js"
echo "-- pymongo auth.py"
"$clients/venv/bin/python" "$here/auth.py" "$host"
echo "-- node driver auth.cjs"
NODE_PATH="$clients/node_modules" node "$here/auth.cjs" "$host"
