# Sourced by bin/demo and bin/test: makes sure Java 17+ and the project's virtualenv exist.
# Sets VENV to the virtualenv's folder.

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TEMPURA_VENV:-$repo/.venv}"

say() { printf '[tempura] %s\n' "$*" >&2; }

java_major() {
  local java="java"
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then java="$JAVA_HOME/bin/java"; fi
  command -v "$java" >/dev/null 2>&1 || { echo 0; return; }
  local version
  version=$("$java" -version 2>&1 | awk -F '"' '/version/ {print $2; exit}')
  case "$version" in
    1.*) echo "${version#1.}" | cut -d. -f1 ;;
    "") echo 0 ;;
    *) echo "$version" | cut -d. -f1 | cut -d- -f1 ;;
  esac
}

ensure_java() {
  local major
  major=$(java_major)
  if [ "$major" -ge 17 ] 2>/dev/null; then return 0; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "Spark needs Java 17 or newer (found: ${major/#0/none}); installing openjdk-17-jre-headless with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    major=$(java_major)
    if [ "$major" -ge 17 ] 2>/dev/null; then return 0; fi
  fi
  say "error: Spark needs Java 17 or newer (found: ${major/#0/none}). Install a JDK or JRE 17+ and put 'java' on the PATH, or set JAVA_HOME."
  exit 1
}

find_python() {
  local candidate
  for candidate in "${TEMPURA_PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  say "error: tempura needs Python 3.11 or newer on the PATH"
  exit 1
}

ensure_venv() {
  local python stamp wanted
  if [ ! -x "$VENV/bin/python" ]; then
    python=$(find_python)
    say "creating a virtualenv in $VENV"
    "$python" -m venv "$VENV"
  fi
  stamp="$VENV/.tempura-installed"
  wanted=$(cat "$repo/pyproject.toml" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    say "installing tempura and its dependencies into $VENV (the first time takes a few minutes)"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$repo[dev]"
    echo "$wanted" > "$stamp"
  fi
}

ensure_java
ensure_venv
