#!/usr/bin/env bash
# `npm run proto`: regenerate proto/gen (google-protobuf JS + .d.ts) from proto/*.proto.
#
# protoc is pinned (3.20.3: the last release whose protoc still carries the JS generator) and fetched from
# Maven Central with Maven, as the bare executable com.google.protobuf:protoc:3.20.3:exe:<os>-<arch>. That
# artifact has no well-known-type .proto files, so they come from the matching protobuf-java jar
# (com.google.protobuf:protobuf-java:3.20.3, which ships google/protobuf/*.proto as resources).
# Both land in .cache/protoc-3.20.3/ (git-ignored); delete that folder to refetch.
#
# Environment:
#   MAVEN_OPTS   passed to Maven as usual, e.g. MAVEN_OPTS=-Dmaven.repo.local=/tmp/m2 for an empty local repo
#   PROTOC       use this protoc instead (must report "libprotoc 3.20.3"); includes are still taken from the jar
set -euo pipefail

PROTOC_VERSION=3.20.3
DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="$ROOT/.cache/protoc-$PROTOC_VERSION"
OUT="$ROOT/proto/gen"
PLUGIN="$ROOT/node_modules/.bin/protoc-gen-ts"

die() { echo "gen-proto: $*" >&2; exit 1; }

classifier() {
  local os arch
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=osx ;;
    *) die "no protoc build on Maven Central for $(uname -s)" ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch_64 ;;
    *) die "no protoc build on Maven Central for $(uname -m)" ;;
  esac
  echo "$os-$arch"
}

# mvn_copy GROUP:ARTIFACT:VERSION[:TYPE[:CLASSIFIER]] DIR — fetch one artifact (checksums enforced) into DIR.
mvn_copy() {
  command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch protoc from Maven Central"
  local log
  echo "gen-proto: fetching $1 from Maven Central" >&2
  # Run outside the project so no stray pom.xml is picked up; -C fails on checksum mismatches. Maven's own
  # output is shown only when it fails.
  if ! log="$(cd "$CACHE" && mvn -B -C -Dstyle.color=never "$DEP_PLUGIN:copy" -Dartifact="$1" -DoutputDirectory="$2" \
    -Dmdep.overWriteReleases=true 2>&1)"; then
    printf '%s\n' "$log" | tail -n 30 >&2
    die "mvn could not fetch $1"
  fi
}

fetch_protoc() {
  local cls exe
  cls="$(classifier)"
  exe="$CACHE/dl/protoc-$PROTOC_VERSION-$cls.exe"
  if [[ ! -x "$CACHE/bin/protoc" ]]; then
    mkdir -p "$CACHE/dl" "$CACHE/bin"
    mvn_copy "com.google.protobuf:protoc:$PROTOC_VERSION:exe:$cls" "$CACHE/dl"
    [[ -f "$exe" ]] || die "expected $exe after the Maven fetch"
    install -m 0755 "$exe" "$CACHE/bin/protoc.tmp"
    mv "$CACHE/bin/protoc.tmp" "$CACHE/bin/protoc"
    rm -f "$exe"
  fi
}

fetch_includes() {
  local jar="$CACHE/dl/protobuf-java-$PROTOC_VERSION.jar" tmp
  if [[ ! -f "$CACHE/include/google/protobuf/timestamp.proto" ]]; then
    mkdir -p "$CACHE/dl"
    mvn_copy "com.google.protobuf:protobuf-java:$PROTOC_VERSION" "$CACHE/dl"
    [[ -f "$jar" ]] || die "expected $jar after the Maven fetch"
    tmp="$(mktemp -d "$CACHE/include.XXXXXX")"
    if command -v unzip >/dev/null; then
      unzip -q -o "$jar" 'google/protobuf/*.proto' -d "$tmp"
    else
      # a jar is a zip; the JDK that runs Maven has `jar`
      (cd "$tmp" && jar xf "$jar" $(jar tf "$jar" | grep -E '^google/protobuf/[^/]+\.proto$'))
    fi
    [[ -f "$tmp/google/protobuf/timestamp.proto" ]] || die "no google/protobuf/*.proto in $jar"
    chmod -R u=rwX,go=rX "$tmp"
    rm -rf "$CACHE/include"
    mv "$tmp" "$CACHE/include"
    rm -f "$jar"
  fi
}

[[ -x "$PLUGIN" ]] || die "$PLUGIN missing (npm install first: ts-protoc-gen is a devDependency)"
mkdir -p "$CACHE"
fetch_includes
if [[ -n "${PROTOC:-}" ]]; then
  protoc="$PROTOC"
else
  fetch_protoc
  protoc="$CACHE/bin/protoc"
fi
got="$("$protoc" --version)"
[[ "$got" == "libprotoc $PROTOC_VERSION" ]] || die "$protoc reports \"$got\", want libprotoc $PROTOC_VERSION"

# Generate into a fresh folder, then swap it in, so proto/gen always holds exactly one complete generation.
tmp="$(mktemp -d "$ROOT/proto/.gen.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cd "$ROOT/proto"
"$protoc" \
  --plugin=protoc-gen-ts="$PLUGIN" \
  -I . -I "$CACHE/include" \
  --js_out=import_style=commonjs,binary:"$tmp" \
  --ts_out="$tmp" \
  ./*.proto
rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT
chmod 0755 "$OUT"
echo "gen-proto: $(cd "$OUT" && ls | tr '\n' ' ')(protoc $PROTOC_VERSION)"
