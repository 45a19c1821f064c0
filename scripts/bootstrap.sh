#!/usr/bin/env bash
# Sets up everything the project needs on a fresh machine, and nothing twice:
#   - Java 17+ for Spark (installed with apt when we are root, otherwise a clear message);
#   - .venv from requirements.lock, rebuilt when the lock or pyproject.toml changed;
#   - the scripts and styles GX Data Docs load from CDNs, from the npm registry (pinned in
#     rsp_jobs/quality/data_docs_assets.json), so that the quality reports render offline;
#   - with --browser (make test): headless Chromium, for the tests that look at pages as a user
#     does (installed with apt when we are root; otherwise those tests say they skip).
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
VENV=.venv
STAMP=$VENV/.rsp-lock-stamp

say() { printf 'bootstrap: %s\n' "$*" >&2; }

find_python() {
  for cand in "${PYTHON:-}" python3.11 python3; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
      command -v "$cand"; return 0
    fi
  done
  return 1
}

java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

ensure_java() {
  if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "Java 17 is missing: installing openjdk-17-jre-headless with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    return 0
  fi
  say "Spark needs Java 17 or newer and 'java' was not found (or is older)."
  say "Install it, e.g. 'sudo apt-get install openjdk-17-jre-headless' (Debian/Ubuntu) or"
  say "'brew install openjdk@17' (macOS), make sure 'java -version' prints 17+, and run again."
  exit 1
}

ensure_venv() {
  local want have py
  want=$( (cat requirements.lock pyproject.toml; echo compiled) | sha256sum | cut -d' ' -f1)
  have=$(cat "$STAMP" 2>/dev/null || true)
  if [ -x "$VENV/bin/python" ] && [ "$want" = "$have" ]; then return 0; fi
  py=$(find_python) || { say "Python 3.11 is required: install python3.11 (or set PYTHON=/path/to/python3.11)."; exit 1; }
  say "creating $VENV from requirements.lock with $py"
  rm -rf "$VENV"
  "$py" -m venv "$VENV"
  "$VENV/bin/pip" install -q "uv==$UV_VERSION"
  # compiled once here: with PYTHONDONTWRITEBYTECODE set, every process would compile Airflow,
  # Spark and GX from source at each import
  "$VENV/bin/uv" pip sync -q --compile-bytecode --python "$VENV/bin/python" requirements.lock
  "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --no-deps -e .
  echo "$want" > "$STAMP"
}

ensure_docs_assets() {
  local pins=rsp_jobs/quality/data_docs_assets.json dest=${RSP_DOCS_ASSETS:-$VENV/share/rsp/data-docs}
  if [ "$(sha256sum "$pins" | cut -d' ' -f1)" = "$(cat "$dest/.pins-sha256" 2>/dev/null || true)" ]; then return 0; fi
  say "fetching the Data Docs scripts and styles (pinned in $pins) into $dest"
  "$VENV/bin/python" -m rsp_jobs.quality.offline_docs --dest "$dest"
}

ensure_browser() {
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "Chromium is missing: installing chromium and chromium-driver with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }
    return 0
  fi
  say "Chromium not found: the browser tests will skip (install Debian's chromium to run them)."
}

ensure_spark_classes() {
  # a class-data-sharing archive of a Spark driver's classes: each JVM then starts in half the
  # time (rsp_jobs/spark/class_archive.py); written once per Spark version, in about 30 s
  "$VENV/bin/python" -c 'import sys; from rsp_jobs.spark.class_archive import archive_path as a; sys.exit(0 if a().is_file() else 1)' && return 0
  say "writing the Spark class archive (once, about 30 s)"
  "$VENV/bin/python" -m rsp_jobs.write_class_archive > "$VENV/class-archive.log" 2>&1 ||
    { say "the class archive failed (Spark still works, from its jars): see $VENV/class-archive.log"; }
}

ensure_java
ensure_venv
ensure_docs_assets
ensure_spark_classes
if [ "${1:-}" = "--browser" ]; then ensure_browser; fi
