#!/usr/bin/env bash
# Runs every real-client script against a running docgrid.
# Usage: run.sh URI CLIENTS_DIR   (CLIENTS_DIR holds node_modules with mongosh and mongodb, and a
# Python venv with pymongo: what .ci/run installs)
set -euo pipefail
uri=$1
clients=$2
here=$(cd "$(dirname "$0")" && pwd)
for script in "$here"/mongosh/*.js; do
  echo "-- mongosh $(basename "$script")"
  "$clients/node_modules/.bin/mongosh" --quiet "$uri" --file "$script"
done
for script in "$here"/pymongo/*.py; do
  echo "-- pymongo $(basename "$script")"
  "$clients/venv/bin/python" "$script" "$uri"
done
for script in "$here"/node/*.cjs; do
  echo "-- node driver $(basename "$script")"
  NODE_PATH="$clients/node_modules" node "$script" "$uri"
done
