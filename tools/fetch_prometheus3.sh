#!/usr/bin/env bash
# tools/fetch_prometheus3.sh [DEST]: the Prometheus 3 LTS line that the nodes run as their agent (bootstrap/versions.yaml
# pins the release tarball from GitHub), for the tests: Debian's stable `prometheus` package is 2.42 and stays the
# stand-in for Amazon Managed Prometheus (the receiver that evaluates the rules); Debian sid carries the 3.5 LTS line
# (packages prometheus and promtool). Both are fetched with `apt-get download` into DEST (default .tools/prometheus3)
# and unpacked there with `dpkg-deb -x`: nothing is installed system-wide and no root is needed.
# Without apt-get (not Debian) it says so and exits 0: the tests that need it skip outside CI and fail in CI.
set -euo pipefail
dest=${1:-.tools/prometheus3}
suite=${FMC_PROMETHEUS3_SUITE:-sid}

# version_of BINARY: the major version `BINARY --version` reports ("prometheus, version 3.5.3+ds1 (branch: ...)").
version_of() {
  local out
  out=$("$1" --version 2>&1) || return 1
  [[ "${out}" =~ version\ ([0-9]+)\.([0-9]+)\.([0-9]+) ]] || return 1
  printf '%s.%s.%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"
}

have=""
if [[ -x "${dest}/usr/bin/prometheus" && -x "${dest}/usr/bin/promtool" ]]; then
  have=$(version_of "${dest}/usr/bin/prometheus" || true)
fi
if [[ "${have}" == 3.* ]]; then
  echo "Prometheus ${have} (agent tests) is in ${dest}"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  echo "no apt-get: Prometheus 3 for the agent tests not fetched (they skip outside CI)" >&2
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/lists/partial" "${work}/cache/archives/partial" "${work}/debs"
echo "deb http://deb.debian.org/debian ${suite} main" >"${work}/sources.list"
apt_opts=(-q -o "Dir::Etc::sourcelist=${work}/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=${work}/lists"
          -o "Dir::Cache=${work}/cache" -o Debug::NoLocking=1)
if [[ "$(id -u)" -eq 0 ]]; then
  apt_opts+=(-o APT::Sandbox::User=root)  # the download directory is root's temporary folder
fi
# three tries, a pause between: a mirror that stumbles once does not fail the suite
tries() {
  local n
  for n in 1 2 3; do
    "$@" && return 0
    echo "attempt ${n} failed: $*" >&2
    sleep $((n * 5))
  done
  return 1
}
tries apt-get "${apt_opts[@]}" update >/dev/null
(cd "${work}/debs" && tries apt-get "${apt_opts[@]}" download prometheus promtool >/dev/null)
rm -rf "${dest}"
mkdir -p "${dest}"
for deb in "${work}"/debs/*.deb; do
  dpkg-deb -x "${deb}" "${dest}"
done
have=$(version_of "${dest}/usr/bin/prometheus") || { echo "no prometheus in Debian ${suite}'s package" >&2; exit 1; }
if [[ "${have}" != 3.* ]]; then
  echo "Debian ${suite} carries Prometheus ${have}, not the 3 line the nodes run: set FMC_PROMETHEUS3_SUITE" >&2
  exit 1
fi
echo "Prometheus ${have} (agent tests) unpacked in ${dest}"
