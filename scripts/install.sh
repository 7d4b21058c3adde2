#!/bin/sh
# Installs turnguard's release binary for this machine:
#
#   curl -fsSL https://github.com/turnguard/turnguard/releases/latest/download/install.sh | sh
#   curl -fsSL .../install.sh | sh -s -- 0.1.0         # a given version
#
# It picks the target from uname and the C library (linux-x64, linux-arm64, their -musl
# builds on musl systems such as Alpine, darwin-x64, darwin-arm64), downloads the release's
# SHA256SUMS and the target's tarball, checks the tarball against SHA256SUMS, and puts the
# binary in the install directory.
#
# Environment:
#   TURNGUARD_INSTALL_DIR    where the binary goes (default: $HOME/.local/bin)
#   TURNGUARD_DOWNLOAD_BASE  the URL of one release's files (default: the GitHub release of
#                            the version asked for, or the latest); file:// works with curl
#   TURNGUARD_REPO           owner/name of the GitHub repository (default: turnguard/turnguard)
#
# Exit codes: 0 installed; 2 usage; 3 this OS or architecture has no build; 4 a download
# failed; 5 the checksum does not match, or SHA256SUMS lists no file for this target;
# 6 the tarball could not be unpacked or the binary not installed.
set -eu

say() { printf 'turnguard install: %s\n' "$*" >&2; }
die() {
  code=$1
  shift
  say "$*"
  exit "$code"
}

version=""
case $# in
  0) ;;
  1) version=${1#v} ;;
  *) die 2 "expected at most one argument, a version (e.g. 0.1.0), got $#" ;;
esac
case $version in
  *[!0-9A-Za-z.-]*) die 2 "\"$1\" is not a version (e.g. 0.1.0 or v0.1.0)" ;;
  "" | [0-9]*.[0-9]*.[0-9]*) ;;
  *) die 2 "\"$1\" is not a version (e.g. 0.1.0 or v0.1.0)" ;;
esac

# The target, named as the release's tarballs are (scripts/release.ts).
os=$(uname -s)
arch=$(uname -m)
case $os in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) die 3 "no build for the OS \"$os\" (builds: Linux and macOS)" ;;
esac
case $arch in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die 3 "no build for the architecture \"$arch\" (builds: x86_64 and arm64)" ;;
esac
# An x64 shell under Rosetta 2 on an Apple silicon Mac: the arm64 build runs natively.
if [ "$os" = darwin ] && [ "$arch" = x64 ] &&
  [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
  arch=arm64
fi
target=$os-$arch
# musl's ldd names itself on --version (and exits 1); glibc's names glibc.
if [ "$os" = linux ]; then
  if (ldd --version 2>&1 || true) | grep -qi musl; then
    target=$target-musl
  elif ! command -v ldd >/dev/null 2>&1 && ls /lib/ld-musl-* >/dev/null 2>&1; then
    target=$target-musl
  fi
fi

repo=${TURNGUARD_REPO:-turnguard/turnguard}
if [ -n "${TURNGUARD_DOWNLOAD_BASE:-}" ]; then
  base=${TURNGUARD_DOWNLOAD_BASE%/}
elif [ -n "$version" ]; then
  base=https://github.com/$repo/releases/download/v$version
else
  base=https://github.com/$repo/releases/latest/download
fi
dir=${TURNGUARD_INSTALL_DIR:-${HOME:?HOME is not set; set TURNGUARD_INSTALL_DIR}/.local/bin}

if command -v curl >/dev/null 2>&1; then
  fetch() { curl --fail --silent --show-error --location --output "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q -O "$2" "$1"; }
else
  die 4 "neither curl nor wget is installed"
fi
if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  die 5 "neither sha256sum nor shasum is installed: cannot check the download"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/turnguard-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" || die 4 "could not download $base/SHA256SUMS"
# The line for this target: the version asked for, or the one release the base holds.
name=""
expected=""
while read -r sum file; do
  if [ -n "$version" ]; then
    [ "$file" = "turnguard-$version-$target.tar.gz" ] || continue
  else
    # turnguard-*-linux-x64.tar.gz is not the -musl file: that one ends in -musl.tar.gz.
    case $file in turnguard-*-"$target".tar.gz) ;; *) continue ;; esac
  fi
  name=$file
  expected=$sum
done <"$tmp/SHA256SUMS"
[ -n "$name" ] ||
  die 5 "$base/SHA256SUMS lists no turnguard-${version:-<version>}-$target.tar.gz"

say "downloading $base/$name"
fetch "$base/$name" "$tmp/$name" || die 4 "could not download $base/$name"
actual=$(sha256 "$tmp/$name")
[ "$actual" = "$expected" ] ||
  die 5 "checksum mismatch for $name: SHA256SUMS says $expected, the download is $actual"

tar -xzf "$tmp/$name" -C "$tmp" || die 6 "could not unpack $name"
unpacked=$tmp/${name%.tar.gz}
[ -f "$unpacked/turnguard" ] || die 6 "$name holds no ${name%.tar.gz}/turnguard"
mkdir -p "$dir" || die 6 "could not create $dir"
# Copied beside the old binary, then renamed over it: a running turnguard keeps its file.
if ! { cp "$unpacked/turnguard" "$dir/.turnguard.new" && chmod 755 "$dir/.turnguard.new" &&
  mv -f "$dir/.turnguard.new" "$dir/turnguard"; }; then
  die 6 "could not install into $dir"
fi

say "installed $("$dir/turnguard" --version 2>/dev/null || echo "${name%.tar.gz}") as $dir/turnguard"
case ":${PATH:-}:" in
  *":$dir:"*) ;;
  *) say "$dir is not on your PATH: add it (export PATH=\"$dir:\$PATH\")" ;;
esac
