"""The bootstrap tests' part of the shared support: projects, fake downloads and a sandbox to run bundles in.

The sandbox is a temporary root (``FMC_ROOT``) plus a PATH that holds only
  * stub commands (nvidia-smi, fi_info, curl, gpg, apt-get, mount, mdadm, systemctl, ...) that
    append their arguments to ``calls.log`` and answer from small bash snippets, and
  * an allow-list of harmless real tools (bash, coreutils, grep, awk, tar, sha256sum, ...).
A command that is neither is "not found", so a script can never reach the host's package
manager, mounts or services -- the tests run as root in some environments. Nothing downloads:
``curl`` serves files from the sandbox.
"""

from __future__ import annotations

import gzip
import json
import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from fmcluster.bootstrap import context, render, versions

from fmcluster.config import parse
from fmcluster.facts import PACKAGE_ARCH
from fmcluster.plan import make_plan

from support import slurm_stubs
from support.shellcheck import SHELLCHECK  # noqa: F401  (re-exported: the sandbox tests lint with it)

SAFE_TOOLS = (
    "bash", "sh", "cat", "cp", "mv", "rm", "mkdir", "ln", "chmod", "install", "touch", "grep", "sed",
    "awk", "cut", "sort", "uniq", "head", "tail", "wc", "tr", "tee", "date", "mktemp", "basename",
    "dirname", "readlink", "realpath", "sha256sum", "tar", "gzip", "xz", "find", "env", "timeout",
    "stat", "cmp", "ls", "true", "false", "rmdir",
)

STUBS = (
    "id", "hostname", "uname", "df", "curl", "gpg", "apt-get", "apt-cache", "dpkg-query", "dnf", "rpm", "fuser",
    "mount", "umount", "mountpoint", "findmnt", "mdadm", "mkfs.xfs", "blkid", "lsblk", "modprobe",
    "modinfo", "lsmod", "ldconfig", "systemctl", "fi_info", "lnetctl", "ip", "gdrcopy_sanity",
    "dcgmi", "docker", "aws", "useradd", "getent", "make", "sleep", "chown", "apt-mark", "gpgconf",
    "update-initramfs", "dracut", "mknod", "journalctl", "runuser",
)
"""Stubs always present. nvidia-smi, nv-fabricmanager, nvidia-imex and enroot are present only
when the image 'has' them (see Image), or after a fake installer puts them in dynbin/."""

REAL = versions.load_versions()
"""The real versions.yaml: every sandbox runs against it, never against a filled-in copy."""
EFA_FPR = REAL.efa_installer.tarball.gpg_fingerprint
LUSTRE_FPR = REAL.lustre_client.ubuntu_key_fingerprint

STUB_HEADER = r"""#!/bin/bash
name=${0##*/}
{ printf '%s' "${name}"; printf ' %s' "$@"; printf '\n'; } >>"${SANDBOX}/calls.log"
state="${SANDBOX}/state"
"""

PKG_HELPERS = r"""
# A package's unit file, as its package ships it.
fmc_ship_unit() { mkdir -p "${FMC_ROOT}/usr/lib/systemd/system"; printf '[Service]\nExecStart=/bin/sh -c true\n' >"${FMC_ROOT}/usr/lib/systemd/system/$1"; }
# fmc_upstream VERSION: without epoch and Debian/RPM revision.
fmc_upstream() { local v=${1#*:}; printf '%s\n' "${v%-*}"; }
# fmc_pkg_install_specs ARGS...: record NAME=VERSION (apt) or NAME-VERSION (dnf) in state/pkgdb, refusing a downgrade.
fmc_pkg_install_specs() {
  local a name ver have allow=0
  [[ " $* " == *" --allow-downgrades "* ]] && allow=1
  [[ " $* " == *" install "* ]] || return 0
  mkdir -p "${state}/pkgdb"
  for a in "$@"; do
    name=""; ver=""
    if [[ "${a}" =~ ^([a-z0-9][a-z0-9+.-]*)=(.+)$ ]]; then name=${BASH_REMATCH[1]}; ver=${BASH_REMATCH[2]}
    elif [[ "${0##*/}" == dnf && "${a}" =~ ^([A-Za-z][A-Za-z0-9+._-]*)-([0-9][^-]*)$ ]]; then name=${BASH_REMATCH[1]}; ver=${BASH_REMATCH[2]}
    fi
    [[ -n "${name}" ]] || continue
    if [[ -f "${state}/pkgdb/${name}" ]]; then
      have=$(<"${state}/pkgdb/${name}")
      if [[ "$(fmc_upstream "${have}")" != "$(fmc_upstream "${ver}")" ]] \
         && [[ "$(printf '%s\n%s\n' "$(fmc_upstream "${have}")" "$(fmc_upstream "${ver}")" | sort -V | head -n1)" == "$(fmc_upstream "${ver}")" ]] \
         && (( ! allow )); then
        if [[ "${0##*/}" == dnf ]]; then
          echo "Error: Package ${name}-${have} of higher version is already installed, cannot install ${name}-${ver}" >&2
        else
          echo "E: Packages were downgraded and -y was used without --allow-downgrades." >&2
        fi
        return 1
      fi
    fi
    printf '%s\n' "${ver}" >"${state}/pkgdb/${name}"
  done
}
"""
"""Package-manager helpers of the apt-get and dnf stubs."""

# name -> bash snippet, run inside the stub (may print and `exit`). Default: exit 0, no output.
BEHAVIOURS: dict[str, str] = {
    "id": 'echo 0',
    "hostname": 'echo ip-10-1-2-3',  # a node's short name, as EC2's private DNS gives it
    "uname": 'case "${1:-}" in -m) echo "${T_ARCH}" ;; -r) echo 6.8.0-1024-aws ;; *) echo Linux ;; esac',
    "df": "printf 'Filesystem 1024-blocks Used Available Capacity Mounted on\\n"
          "/dev/root 209715200 1048576 104857600 1%% /\\n'",
    "curl": r"""
url=${!#}; out=""
prev=""
for a in "$@"; do [[ "${prev}" == -o ]] && out=${a}; prev=${a}; done
case "${url}" in
  *169.254.169.254*api/token) echo token; exit 0 ;;
  *169.254.169.254*instance-type) echo "${T_ITYPE}"; exit 0 ;;
  *169.254.169.254*instance-id) echo i-0123456789abcdef0; exit 0 ;;
  *169.254.169.254*placement/region) echo us-east-1; exit 0 ;;
  *169.254.169.254*local-ipv4) echo 10.0.0.5; exit 0 ;;
  *127.0.0.1:*/metrics) port=${url##*:}; port=${port%%/*}; [[ -e "${state}/down-${port}" ]] && exit 7; exit 0 ;;
esac
base=${url##*/}
fail="${SANDBOX}/fail/${base}"
if [[ -f "${fail}" ]]; then
  n=$(<"${fail}")
  if (( n > 0 )); then echo $((n - 1)) >"${fail}"; echo "curl: (56) Recv failure: Connection reset by peer" >&2; exit 56; fi
fi
[[ -f "${SANDBOX}/files/${base}" ]] || { echo "curl: (22) The requested URL returned error: 404" >&2; exit 22; }
cp "${SANDBOX}/files/${base}" "${out}"
""",
    "gpg": r"""
args=" $* "
if [[ "${args}" == *" --verify "* ]]; then
  if [[ -f "${SANDBOX}/gpg-bad" ]]; then echo "[GNUPG:] BADSIG A05480B1DD2D3CCC Amazon EC2 EFA"; exit 1; fi
  echo "[GNUPG:] VALIDSIG AAAA 2026-10-22 0 0 4 0 1 10 00 ${T_EFA_FPR}"; exit 0
fi
if [[ "${args}" == *" --show-keys "* ]]; then
  fpr=${T_LUSTRE_FPR}; [[ "${args}" == *nvidia-* ]] && fpr=${T_NV_FPR}
  echo "pub:-:4096:1:X:0:::-:::scESC::::::23::0:"; echo "fpr:::::::::${fpr}:"; exit 0
fi
if [[ "${args}" == *" --dearmor "* ]]; then prev=""; for a in "$@"; do [[ "${prev}" == -o ]] && : >"${a}"; prev=${a}; done; fi
exit 0
""",
    "dpkg-query": r"""
# dpkg-query -W -f=FORMAT NAME: from the sandbox's package database (state/pkgdb/NAME holds the version).
name=${!#}; fmt=""
for a in "$@"; do [[ "${a}" == -f=* ]] && fmt=${a#-f=}; done
[[ -f "${state}/pkgdb/${name}" ]] || { echo "dpkg-query: no packages found matching ${name}" >&2; exit 1; }
if [[ "${fmt}" == *Version* ]]; then cat "${state}/pkgdb/${name}"; else printf 'install ok installed'; fi
""",
    "apt-cache": r"""
case "$1" in
  madison) f="${SANDBOX}/madison/$2"; [[ -f "${f}" ]] || exit 0
           while read -r v; do
             printf ' %s | %s | https://developer.download.nvidia.com/compute/cuda/repos x Packages\n' "$2" "${v}"
           done <"${f}" ;;
  show) [[ -e "${state}/apt-has-$2" ]] ;;
  pkgnames) cat "${state}/apt-pkgnames" 2>/dev/null; exit 0 ;;
esac
""",
    "mknod": '[[ "$1" == -m ]] && shift 2; : >"$1"',
    "journalctl": 'cat "${state}/kernel.log" 2>/dev/null; exit 0',
    "rpm": r"""
[[ "${1:-}" == -q ]] || exit 0
name=${!#}
[[ -f "${state}/pkgdb/${name}" ]] || { echo "package ${name} is not installed"; exit 1; }
if [[ " $* " == *" --qf "* || " $* " == *" --queryformat "* ]]; then cat "${state}/pkgdb/${name}"; else echo "${name}-$(<"${state}/pkgdb/${name}")"; fi
""",
    "fuser": r"""
f="${state}/lock-held"
[[ -f "${f}" ]] || exit 1
n=$(<"${f}"); (( n > 0 )) || exit 1
echo $((n - 1)) >"${f}"
exit 0
""",
    "getent": "exit 2",
    # runuser -u USER -- CMD...: CMD as USER (RUNUSER=USER in its environment, for the stubs that care)
    "runuser": r'u=""; while [[ $# -gt 0 && "$1" != -- ]]; do [[ "$1" == -u ]] && u=$2; shift; done; shift; '
               r'RUNUSER=${u} exec "$@"',

    "mount": r'[[ -e "${state}/lustre-mount-fails" && " $* " == *" -t lustre "* ]] && { echo "mount.lustre: mount ${1:-} at ${!#} failed: Input/output error" >&2; exit 5; }; mkdir -p "${state}/mounted"; t=${!#}; : >"${state}/mounted/${t//\//_}"',
    "mountpoint": r't=${!#}; [[ -e "${state}/mounted/${t//\//_}" ]]',
    "findmnt": r't=${!#}; [[ -e "${state}/mounted/${t//\//_}" ]] && echo "${t} fs@tcp:/x lustre rw"',
    "mdadm": r"""
case " $* " in
  *" --create "*) : >"${state}/raid" ;;
  *" --assemble "*) [[ -e "${state}/raid" ]] || exit 1 ;;
  *" --scan "*) echo "ARRAY /dev/md/fmcluster-scratch metadata=1.2 UUID=00000000:00000000:00000000:00000000" ;;
  *" --detail "*) [[ -e "${state}/raid" ]] || exit 1 ;;
esac
""",
    "mkfs.xfs": ': >"${state}/xfs"',
    "blkid": '[[ -e "${state}/xfs" ]] && echo xfs || exit 2',
    "modprobe": 'printf "%s 16384 0\\n" "${!#}" >>"${state}/modules"',
    "lsmod": 'echo "Module Size Used by"; cat "${state}/modules" 2>/dev/null; exit 0',
    "modinfo": '[[ -e "${state}/has-lustre" ]]',
    "ldconfig": '[[ "${1:-}" == -p && -e "${state}/has-gdrcopy" ]] && echo "	libgdrapi.so.2 (libc6,x86-64) => /usr/lib/libgdrapi.so.2"; exit 0',
    "systemctl": r"""
# Like systemd: a unit must have a unit file (image, package or bundle) before it can be enabled or started.
fmc_unit_exists() {
  local u=$1 d
  [[ "${u}" == *.* ]] || u="${u}.service"
  for d in etc/systemd/system usr/lib/systemd/system lib/systemd/system; do
    [[ -f "${FMC_ROOT}/${d}/${u}" ]] && return 0
  done
  return 1
}
cmd=${1:-}; shift || true
units=(); quiet=0; now=0
for a in "$@"; do
  case "${a}" in --quiet|-q) quiet=1 ;; --now) now=1 ;; -*) ;; *) units+=("${a}") ;; esac
done
case "${cmd}" in
  is-active)
    u=${units[0]}; fmc_unit_exists "${u}" || { ((quiet)) || echo inactive; exit 3; }
    [[ -e "${state}/inactive-${u}" ]] && exit 3; exit 0 ;;
  is-enabled)
    u=${units[0]}; fmc_unit_exists "${u}" || { ((quiet)) || echo "Failed to get unit file state for ${u}: No such file or directory" >&2; exit 1; }
    [[ -e "${state}/enabled-${u}" ]]; exit ;;  # the status, not the final exit 0
  enable)
    for u in "${units[@]}"; do
      fmc_unit_exists "${u}" || { echo "Failed to enable unit: Unit file ${u} does not exist." >&2; exit 1; }
    done
    for u in "${units[@]}"; do : >"${state}/enabled-${u}"; done ;;
  start|restart)
    for u in "${units[@]}"; do
      fmc_unit_exists "${u}" || { echo "Failed to ${cmd} ${u}: Unit ${u} not found." >&2; exit 5; }
    done ;;
  show)  # -p PROPERTY --value UNIT: ActiveState from state/activestate-UNIT (a line per call, the last repeats)
    u=${units[-1]}; prop=""
    for a in "$@"; do [[ "${a}" == ActiveState || "${a}" == ExecMainExitTimestampMonotonic ]] && prop=${a}; done
    if [[ "${prop}" == ActiveState ]]; then
      f="${state}/activestate-${u}"
      if [[ -s "${f}" ]]; then
        head -n1 "${f}"; (( $(wc -l <"${f}") > 1 )) && sed -i 1d "${f}"
      elif fmc_unit_exists "${u}"; then echo active; else echo inactive; fi
    else
      echo 0
    fi
    exit 0 ;;
  list-unit-files)
    for u in "${units[@]}"; do
      if fmc_unit_exists "${u}"; then
        if [[ -e "${state}/enabled-${u}" ]]; then echo "${u} enabled enabled"; else echo "${u} disabled enabled"; fi
      fi
    done
    exit 0 ;;
esac
# Starting a persistence service turns persistence mode on.
if [[ "${cmd}" == start || "${cmd}" == restart || ( "${cmd}" == enable && ${now} == 1 ) ]]; then
  for u in "${units[@]}"; do
    case "${u}" in *persistenced*|parallelcluster_nvidia*) rm -f "${state}/persistence-off" ;; esac
  done
fi
exit 0
""",
    "fi_info": r"""
for ((i = 0; i < T_EFA_COUNT; i++)); do
  printf 'provider: efa\n    fabric: efa\n    domain: rdmap%ss27-rdm\n    version: 122.0\n    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\n' $((16 + i))
done
""",
    "ip": 'echo "default via 10.0.0.1 dev enp71s0 proto dhcp src 10.0.0.5 metric 100"',
    "docker": '[[ "${1:-}" == image && ! -e "${state}/docker-pulled" ]] && exit 1; [[ "${1:-}" == pull ]] && : >"${state}/docker-pulled"; exit 0',
    "make": r"""
if [[ " $* " == *" install "* ]]; then
  mkdir -p "${FMC_ROOT}/usr/local/lib/slurm"; : >"${FMC_ROOT}/usr/local/lib/slurm/spank_pyxis.so"
fi
""",
    "apt-get": r"""
# Like apt: two sources for NVIDIA's CUDA repository with different keyrings stop every command,
# and installing NAME=VERSION older than the installed one needs --allow-downgrades.
mapfile -t nv < <(grep -l 'developer.download.nvidia.com/compute/cuda/repos' \
  "${FMC_ROOT}"/etc/apt/sources.list "${FMC_ROOT}"/etc/apt/sources.list.d/*.list 2>/dev/null)
if (( ${#nv[@]} > 1 )); then
  echo "E: Conflicting values set for option Signed-By regarding source https://developer.download.nvidia.com/compute/cuda/repos/ /: ${nv[*]#"${FMC_ROOT}"}" >&2
  echo "E: The list of sources could not be read." >&2
  exit 100
fi
fmc_pkg_install_specs "$@" || exit 100
for a in "$@"; do
  case "${a}" in
    *enroot_*.deb) cp "${SANDBOX}/pending/enroot" "${SANDBOX}/dynbin/enroot" ;;
    nvidia-driver-*=*) cp "${SANDBOX}/pending/nvidia-smi" "${SANDBOX}/dynbin/nvidia-smi"; fmc_ship_unit nvidia-persistenced.service ;;
    nvidia-fabricmanager=*|nvidia-fabricmanager-[0-9]*=*) cp "${SANDBOX}/pending/nv-fabricmanager" "${SANDBOX}/dynbin/nv-fabricmanager"; fmc_ship_unit nvidia-fabricmanager.service ;;
    nvidia-imex=*|nvidia-imex-[0-9]*=*) cp "${SANDBOX}/pending/nvidia-imex" "${SANDBOX}/dynbin/nvidia-imex"; fmc_ship_unit nvidia-imex.service ;;
    datacenter-gpu-manager-exporter=*) cp "${SANDBOX}/pending/dcgm-exporter" "${SANDBOX}/dynbin/dcgm-exporter"; fmc_ship_unit nvidia-dcgm-exporter.service ;;
    datacenter-gpu-manager-4-core=*) fmc_ship_unit nvidia-dcgm.service ;;
    nvlsm|nvlsm=*) mkdir -p "${FMC_ROOT}/opt/nvidia/nvlsm/sbin"; : >"${FMC_ROOT}/opt/nvidia/nvlsm/sbin/nvlsm" ;;
    infiniband-diags|ibutils) [[ " $* " == *" install "* ]] && { mkdir -p "${state}/pkgdb"; echo 1.0 >"${state}/pkgdb/${a}"; } ;;
    lustre-client-modules-*) : >"${state}/has-lustre" ;;
  esac
done
""",
    "dnf": r"""
fmc_pkg_install_specs "$@" || exit 1
for a in "$@"; do
  case "${a}" in
    infiniband-diags|libibumad) [[ " $* " == *" install "* ]] && { mkdir -p "${state}/pkgdb"; echo 1.0 >"${state}/pkgdb/${a}"; } ;;
    *enroot-*.rpm) cp "${SANDBOX}/pending/enroot" "${SANDBOX}/dynbin/enroot" ;;
    nvidia-open-*) cp "${SANDBOX}/pending/nvidia-smi" "${SANDBOX}/dynbin/nvidia-smi"; fmc_ship_unit nvidia-persistenced.service ;;
    nvidia-fabricmanager-*) cp "${SANDBOX}/pending/nv-fabricmanager" "${SANDBOX}/dynbin/nv-fabricmanager"; fmc_ship_unit nvidia-fabricmanager.service ;;
    nvidia-imex-*) cp "${SANDBOX}/pending/nvidia-imex" "${SANDBOX}/dynbin/nvidia-imex"; fmc_ship_unit nvidia-imex.service ;;
    datacenter-gpu-manager-exporter-*) cp "${SANDBOX}/pending/dcgm-exporter" "${SANDBOX}/dynbin/dcgm-exporter"; fmc_ship_unit nvidia-dcgm-exporter.service ;;
    datacenter-gpu-manager-4-core-*) fmc_ship_unit nvidia-dcgm.service ;;
    nvlsm|nvlsm-*) mkdir -p "${FMC_ROOT}/opt/nvidia/nvlsm/sbin"; : >"${FMC_ROOT}/opt/nvidia/nvlsm/sbin/nvlsm" ;;
    lustre-client) : >"${state}/has-lustre" ;;
  esac
done
""",
    "aws": r"""
fmc_member_ids() {
  local ip k=0
  while read -r ip; do
    [[ -n "${ip}" ]] || continue
    k=$((k + 1))
    if [[ "${ip}" == 10.0.0.5 ]]; then echo i-0123456789abcdef0; else echo "i-0sandbox${k}"; fi
  done < <(tr -s ' \t' '\n' <"${state}/members" 2>/dev/null)
}
case "$1 $2" in
  # IMEX members (fmcluster-imex): one UltraServer whose members' addresses are state/members; this node is
  # i-0123456789abcdef0 at 10.0.0.5, the others i-0sandbox<N>. tests/bootstrap/test_imex.py emulates the APIs fully.
  "ec2 describe-instance-topology")
    if [[ " $* " == *" --instance-ids "* ]]; then echo cb-0sandbox; exit 0; fi
    fmc_member_ids | tr '\n' '\t'; echo; exit 0 ;;
  "ec2 describe-instances") tr -s ' \t' '\t' <"${state}/members" 2>/dev/null; exit 0 ;;
  "sagemaker list-cluster-nodes") fmc_member_ids | sed 's/$/\tus-0sandbox\tRunning/'; exit 0 ;;
  "sagemaker describe-cluster-node")
    prev=""; for a in "$@"; do [[ "${prev}" == --node-id ]] && node=${a}; prev=${a}; done
    mapfile -t ids < <(fmc_member_ids); mapfile -t ips < <(tr -s ' \t' '\n' <"${state}/members" | grep .)
    for k in "${!ids[@]}"; do [[ "${ids[k]}" == "${node}" ]] && echo "${ips[k]}"; done
    exit 0 ;;
  "autoscaling describe-auto-scaling-instances") cat "${state}/asg" 2>/dev/null || echo None; exit 0 ;;
  "ec2 create-tags"|"autoscaling set-instance-health") exit 0 ;;
  # SSM parameters (the launcher's bootstrap pointers): ssm/<name or ARN, ':' and '/' as '_'> holds the value.
  # The options are the real CLI's; exit 252 a bad command line, 253 no Region, 254 the service's error (AWS CLI
  # user guide, "Command line return codes"); fail/ssm-get-parameter: that many calls fail first (throttled).
  "ssm get-parameter")
    name=""; region=""; query=""; output=""
    set -- "${@:3}"
    while (( $# )); do
      case "$1" in
        --name|--region|--query|--output) [[ $# -ge 2 ]] || { echo "aws: error: argument $1: expected one argument" >&2; exit 252; } ;;&
        --name) name=$2; shift 2 ;;
        --region) region=$2; shift 2 ;;
        --query) query=$2; shift 2 ;;
        --output) output=$2; shift 2 ;;
        *) echo "aws: error: unrecognized arguments: $1" >&2; exit 252 ;;
      esac
    done
    [[ -n "${name}" ]] || { echo "aws: error: the following arguments are required: --name" >&2; exit 252; }
    [[ -n "${region}" ]] || { echo "You must specify a region." >&2; exit 253; }
    [[ "${query}" == Parameter.Value && "${output}" == text ]] \
      || { echo "sandbox aws: only --query Parameter.Value --output text is modelled" >&2; exit 252; }
    fail="${SANDBOX}/fail/ssm-get-parameter"
    if [[ -f "${fail}" ]] && (( $(<"${fail}") > 0 )); then
      echo $(($(<"${fail}") - 1)) >"${fail}"
      echo "An error occurred (ThrottlingException) when calling the GetParameter operation: Rate exceeded" >&2; exit 254
    fi
    value="${SANDBOX}/ssm/${name//[:\/]/_}"
    [[ -f "${value}" ]] || { echo "An error occurred (ParameterNotFound) when calling the GetParameter operation: " >&2; exit 254; }
    cat "${value}"; exit 0 ;;
  "s3 cp") ;;
  *) exit 1 ;;
esac
args=("$@"); n=${#args[@]}; src=${args[n-2]}; dest=${args[n-1]}
src=${src%/}
cp -R "${SANDBOX}/s3/${src##*/}" "${dest}"
""",
}

# Present only when the image has them (or a fake installer copies them from pending/ to dynbin/).
OPTIONAL_STUBS: dict[str, str] = {
    "nvidia-smi": r"""
case " $* " in
  *" nvlink "*)
    for ((g = 0; g < T_GPUS; g++)); do
      echo "GPU ${g}: ${T_GPU_NAME} (UUID: GPU-${g})"
      for ((l = 0; l < 18; l++)); do
        if [[ -e "${state}/nvlink-down" && ${g} == 0 && ${l} == 0 ]]; then echo "	 Link ${l}: <inactive>"; else echo "	 Link ${l}: 26.562 GB/s"; fi
      done
    done ;;
  *driver_version*) for ((g = 0; g < T_GPUS; g++)); do echo "${T_DRIVER}"; done ;;
  *" -pm 1 "*) rm -f "${state}/persistence-off" ;;
  *persistence_mode*) for ((g = 0; g < T_GPUS; g++)); do [[ -e "${state}/persistence-off" ]] && echo Disabled || echo Enabled; done ;;
  *remapped_rows*) for ((g = 0; g < T_GPUS; g++)); do
      if [[ -e "${state}/remap-pending" && ${g} == 0 ]]; then echo "00000000:53:00.0, Yes, No"
      elif [[ -e "${state}/remap-failed" && ${g} == 2 ]]; then echo "00000000:52:00.0, No, Yes"
      else echo "00000000:5${g}:00.0, No, No"; fi; done ;;
  *pcie.link.width*) for ((g = 0; g < T_GPUS; g++)); do  # state/pcie-x8: GPU 3's link trained at x8 of x16
      if [[ -e "${state}/pcie-x8" && ${g} == 3 ]]; then echo "00000000:53:00.0, 8, 16"; else echo "00000000:5${g}:00.0, 16, 16"; fi; done ;;
  *hw_slowdown*) once=0; [[ -e "${state}/hw-slowdown-once" ]] && once=1; rm -f "${state}/hw-slowdown-once"
    for ((g = 0; g < T_GPUS; g++)); do  # state/hw-slowdown: GPU 5 is held in HW Slowdown; -once: one reading only
      if [[ ( -e "${state}/hw-slowdown" || ${once} == 1 ) && ${g} == 5 ]]; then echo "00000000:55:00.0, Active"; else echo "00000000:5${g}:00.0, Not Active"; fi; done ;;
  *retired_pages*) for ((g = 0; g < T_GPUS; g++)); do
      if [[ -e "${state}/retired-pending" && ${g} == 1 ]]; then echo "00000000:51:00.0, Yes"; else echo "00000000:5${g}:00.0, [N/A]"; fi; done ;;
  " -q ") for ((g = 0; g < T_GPUS; g++)); do
      st="Completed" ss="Success"
      [[ -e "${state}/fabric-bad" ]] && st="In Progress"
      [[ -e "${state}/fabric-na" ]] && st="N/A" ss="N/A"
      printf 'GPU 0000000%s:00.0\n    Fabric\n        State                             : %s\n        Status                            : %s\n' "${g}" "${st}" "${ss}"; done ;;
  *name*) for ((g = 0; g < T_GPUS; g++)); do echo "${T_GPU_NAME}"; done ;;
esac
""",
    "nv-fabricmanager": 'echo "Fabric Manager version is : ${T_DRIVER}"',
    "nvidia-imex": "exit 0",
    "dcgm-exporter": "exit 0",
    "enroot": '[[ "${1:-}" == version ]] && echo 3.4.1; exit 0',
}


def make_project(instance_type: str = "p5.48xlarge", os_name: str = "ubuntu-22.04", orchestrator: str = "parallelcluster"):
    text = f"""
name: demo
availability_zone_id: use1-az6
os: {os_name}
compute_groups:
  - name: gpu
    instance_type: {instance_type}
    count: 2
orchestrator:
  type: {orchestrator}
"""
    return parse(text).project


def context_for(project, *args, **kwargs) -> context.BootstrapContext:
    """:func:`fmcluster.bootstrap.context.context_for` for a hand-built project: plans it first."""
    return context.context_for(make_plan(project).cluster, *args, **kwargs)


FSX = context.FsxMount(
    file_system_id="fs-0123456789abcdef0",
    dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    mount_name="abcdefgh",
    efa_enabled=True,
)


def _targz(members: dict[str, tuple[str, int]]) -> bytes:
    """A deterministic .tar.gz (no timestamps), so its sha256 is stable."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, (content, mode) in members.items():
            data = content.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)


def fake_artifacts(arch: str = "x86_64") -> dict[str, bytes]:
    """Download name -> content of every file the sandbox's curl can serve."""
    ne_dir = f"node_exporter-1.9.1.linux-{'amd64' if arch == 'x86_64' else 'arm64'}"
    return {
        f"{ne_dir}.tar.gz": _targz(
            {f"{ne_dir}/node_exporter": ("#!/bin/sh\necho 'node_exporter, version 1.9.1 (branch: HEAD)'\n", 0o755)}
        ),
        "aws-efa-installer-1.51.0.tar.gz": _targz(
            {
                "aws-efa-installer/efa_installer.sh": (
                    "#!/bin/bash\necho \"efa_installer.sh $*\" >>\"${SANDBOX}/calls.log\"\n"
                    "mkdir -p \"${FMC_ROOT}/opt/amazon\"\n"
                    "printf '# EFA installer version: 1.51.0\\n' >\"${FMC_ROOT}/opt/amazon/efa_installed_packages\"\n"
                    # the 1.44+ layout of aws-ofi-nccl: lib64/ on AL2023, lib/ on Ubuntu (FACTS.md section 4)
                    "d=lib; grep -q '^ID=amzn' \"${FMC_ROOT}/etc/os-release\" && d=lib64\n"
                    "mkdir -p \"${FMC_ROOT}/opt/amazon/ofi-nccl/${d}\"\n"
                    "echo ELF >\"${FMC_ROOT}/opt/amazon/ofi-nccl/${d}/libnccl-net-ofi.so\"\n"
                    "echo ELF >\"${FMC_ROOT}/opt/amazon/ofi-nccl/${d}/libnccl-ofi-tuner.so\"\n"
                    "cp \"${SANDBOX}/pending/fi_info\" \"${SANDBOX}/dynbin/fi_info\" 2>/dev/null || true\n",
                    0o755,
                )
            }
        ),
        "aws-efa-installer-1.51.0.tar.gz.sig": b"signature",
        "aws-efa-installer.key": b"key",
        "3bf863cc.pub": b"nvidia ubuntu repository key",
        "D42D0685.pub": b"nvidia rpm repository key",
        "fsx-ubuntu-public-key.asc": b"fsx key",
        f"enroot_3.4.1-1_{PACKAGE_ARCH[arch]}.deb": b"deb",
        f"enroot+caps_3.4.1-1_{PACKAGE_ARCH[arch]}.deb": b"deb-caps",
        f"enroot-3.4.1-1.el8.{arch}.rpm": b"rpm",
        f"enroot+caps-3.4.1-1.el8.{arch}.rpm": b"rpm-caps",
        "v0.19.0.tar.gz": _targz({"pyxis-0.19.0/Makefile": ("all:\n", 0o644)}),
        "v2.6.tar.gz": _targz({"gdrcopy-2.6/packages/build-deb-packages.sh": ("#!/bin/sh\n", 0o755)}),
    }


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def with_optional_pins(artifacts: dict[str, bytes], arch: str = "x86_64") -> versions.Versions:
    """The real versions.yaml plus digests for the OPTIONAL components only (enroot, pyxis,
    GDRCopy), as an operator who verified them would pin: the path that downloads and builds them."""
    data = yaml.safe_load(versions.VERSIONS_FILE.read_text())
    deb = PACKAGE_ARCH[arch]
    data["enroot"]["deb"]["sha256"][arch] = sha(artifacts[f"enroot_3.4.1-1_{deb}.deb"])
    data["enroot"]["deb_caps"]["sha256"][arch] = sha(artifacts[f"enroot+caps_3.4.1-1_{deb}.deb"])
    data["enroot"]["rpm"]["sha256"][arch] = sha(artifacts[f"enroot-3.4.1-1.el8.{arch}.rpm"])
    data["enroot"]["rpm_caps"]["sha256"][arch] = sha(artifacts[f"enroot+caps-3.4.1-1.el8.{arch}.rpm"])
    data["pyxis"]["source"]["sha256"] = sha(artifacts["v0.19.0.tar.gz"])
    data["gdrcopy"]["source"]["sha256"] = sha(artifacts["v2.6.tar.gz"])
    return versions.Versions.model_validate(data)


IMAGE_UNIT = "[Service]\nExecStart=/bin/sh -c true\n"
"""The unit file of a service the image (or a package) ships: only its existence matters to the stubs."""


@dataclass
class Image:
    """What the node's AMI already carries. ``Image()`` is a generous image (everything present);
    :meth:`from_profile` builds the image an image profile (``fmcluster/bootstrap/profiles/``) describes."""

    driver: bool = True
    fabric_manager: bool = True
    efa: bool = True
    gdrcopy: bool = True
    lustre: bool = True
    enroot: bool = True
    pyxis: bool = True
    dcgm_exporter: bool = True
    node_exporter: bool = True
    nvme_drives: int = 8
    efa_devices: int = 32
    gpus: int = 8
    gpu_name: str = "NVIDIA H100 80GB HBM3"
    driver_version: str = "580.105.08"
    repo_names: int = 0
    """Which of a package entry's alternatives ("a|b") NVIDIA's repository carries (0: the first)."""
    efa_version: str = "1.47.0"
    ofi_nccl_files: tuple[str, ...] | None = None
    """The aws-ofi-nccl libraries ({arch}: uname -m). None: EFA installer >= 1.44's layout for the OS, with the tuner."""
    units: tuple[str, ...] | None = None
    """Unit files the image ships (all enabled). None: those of the packages this image has (nvidia-persistenced,
    nvidia-fabricmanager, nvidia-imex, nvidia-dcgm-exporter)."""
    packages: dict[str, str] = field(default_factory=dict)
    """Installed packages (name -> version as dpkg/rpm reports it)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Extra files (path -> content): package sources such as an image's cuda-keyring list."""
    persistence_mode: bool = True
    """What nvidia-smi reports for persistence mode."""
    imex: bool | None = None
    """nvidia-imex present. None: with the driver (the earlier behaviour)."""
    nvlsm: bool = False
    data_volume: str | None = None
    """A Kubernetes node image (HyperPod EKS): containerd and kubelet with data under /var/lib, and the orchestrator's
    secondary volume mounted here. None: no Kubernetes parts."""
    container_toolkit: bool = False
    """/usr/bin/nvidia-container-runtime (NVIDIA Container Toolkit) is there."""
    profile: str = "generous"
    """A label for test ids and messages."""

    @classmethod
    def from_profile(cls, profile, arch: str, present: dict[str, bool] | None = None, **overrides) -> Image:
        """The image ``profile`` (an :class:`~fmcluster.bootstrap.profiles.ImageProfile`) describes for ``arch``;
        ``present`` overrides which facts the image has (see ``ImageProfile.variants``). ``overrides`` set the
        instance's hardware (gpus, gpu_name, efa_devices, nvme_drives)."""
        comps = profile.arches[arch].components
        has = {name: getattr(comps, name).present for name in type(comps).model_fields} | {"ofi_nccl": True}
        has |= present or {}
        ubuntu = profile.os != "al2023"
        nv_arch = "sbsa" if arch == "aarch64" else "x86_64"
        distro = {"ubuntu-22.04": "ubuntu2204", "ubuntu-24.04": "ubuntu2404", "al2023": "amzn2023"}[profile.os]
        units: list[str] = ["docker.service"]  # the docker stub is always on PATH
        packages: dict[str, str] = {}
        if has["slurm"]:
            units.append("slurmd.service")
        if has["persistence"]:
            units += comps.persistence.units
        if has["nvidia_persistenced_unit"] and "nvidia-persistenced.service" not in units:
            units.append("nvidia-persistenced.service")
        if has["driver"] and has["fabric_manager"]:
            units.append("nvidia-fabricmanager.service")
        if has["driver"] and has["imex"]:
            units.append("nvidia-imex.service")
        if has["dcgm"]:
            units.append("nvidia-dcgm.service")
            dcgm = comps.dcgm.version or "4.4.2"
            packages["datacenter-gpu-manager-4-core"] = f"1:{dcgm}-1" if ubuntu else f"{dcgm}-1"
        if has["dcgm_exporter"]:
            units.append("nvidia-dcgm-exporter.service")
        if has["nvlsm"]:
            packages["nvlsm"] = "2025.10.0-1"  # a version the profile does not state; only its presence matters
        ofi = comps.efa.ofi_nccl
        sources = {}
        if has["cuda_source"]:
            src = comps.cuda_source
            line = src.line.format(nv_arch=nv_arch, distro=distro)
            sources[src.path.format(nv_arch=nv_arch, distro=distro)] = (
                line + "\n" if ubuntu else f"[cuda-{distro}-{nv_arch}]\nname=cuda\n{line}\nenabled=1\ngpgcheck=1\n")
        fields = dict(
            driver=has["driver"], fabric_manager=has["fabric_manager"], imex=has["imex"], nvlsm=has["nvlsm"],
            efa=has["efa"], gdrcopy=has["gdrcopy"], lustre=has["lustre"], enroot=has["enroot"], pyxis=has["pyxis"],
            dcgm_exporter=has["dcgm_exporter"],  # node_exporter: pre-placed, a fake could never match the real digest
            driver_version=comps.driver.version or "580.105.08",
            efa_version=comps.efa.version or "1.47.0",
            ofi_nccl_files=tuple(ofi.files if has["ofi_nccl"] else ofi.alternative_files),
            units=tuple(units), packages=packages, sources=sources,
            persistence_mode=has["persistence"], profile=profile.name,
        )
        kube = profile.arches[arch].kubernetes
        if kube is not None:
            units += ["containerd.service", "kubelet.service"]
            fields |= dict(data_volume=kube.data_volume.path if kube.data_volume.present else None,
                           container_toolkit=kube.container_toolkit.present)
        return cls(**(fields | overrides))

    def unit_files(self) -> tuple[str, ...]:
        if self.units is not None:
            return self.units
        derived = ["docker.service", "slurmd.service"]  # the docker stub is always on PATH
        if self.driver:
            derived += ["nvidia-persistenced.service", "nvidia-imex.service"]
        if self.driver and self.fabric_manager:
            derived.append("nvidia-fabricmanager.service")
        if self.dcgm_exporter:
            derived.append("nvidia-dcgm-exporter.service")
        return tuple(derived)


@dataclass
class Result:
    rc: int
    out: str
    calls: list[str]
    log: str


@dataclass
class Sandbox:
    path: Path
    bundle: Path
    manifest: render.Manifest
    env: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path / "root"

    def run(self, script: str | None = None, timeout: int = 60) -> Result:
        """Run the entry script (or one step script) and return what happened during this run."""
        calls_file = self.path / "calls.log"
        before = len(calls_file.read_text().splitlines()) if calls_file.exists() else 0
        log_file = self.root / "var/log/fmcluster/bootstrap.log"
        log_before = len(log_file.read_text()) if log_file.exists() else 0
        target = self.bundle / (script or render.ENTRY_NAME)
        proc = subprocess.run(
            ["bash", str(target)],
            env=self.env,
            cwd=self.path,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        calls = calls_file.read_text().splitlines()[before:] if calls_file.exists() else []
        log = log_file.read_text()[log_before:] if log_file.exists() else ""
        return Result(proc.returncode, proc.stdout + proc.stderr, calls, log)

    def fail_download(self, name: str, times: int) -> None:
        (self.path / "fail").mkdir(exist_ok=True)
        (self.path / "fail" / name).write_text(f"{times}\n")

    def set_state(self, name: str) -> None:
        (self.path / "state" / name).touch()

    def serve(self, name: str, content: bytes) -> None:
        (self.path / "files" / name).write_bytes(content)


def _write_stub(path: Path, body: str) -> None:
    helpers = PKG_HELPERS if path.name in ("apt-get", "dnf") else ""
    path.write_text(STUB_HEADER + helpers + body + "\n")
    path.chmod(0o755)


def build_sandbox(
    path: Path,
    ctx: context.BootstrapContext,
    image: Image,
    *,
    itype: str | None = None,
) -> Sandbox:
    """A sandbox with ``ctx``'s bundle rendered into it and an image carrying what ``image`` says."""
    for sub in ("stubs", "dynbin", "safebin", "pending", "files", "state", "tmp", "s3", "root"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    for tool in SAFE_TOOLS:
        real = shutil.which(tool, path="/usr/bin:/bin")
        if real:
            (path / "safebin" / tool).symlink_to(real)
    (path / "safebin" / "python3").symlink_to(sys.executable)
    for name in STUBS:
        _write_stub(path / "stubs" / name, BEHAVIOURS.get(name, ""))
    for name, body in OPTIONAL_STUBS.items():
        _write_stub(path / "pending" / name, body)
    _write_stub(path / "pending" / "fi_info", BEHAVIOURS["fi_info"])
    present = {
        "nvidia-smi": image.driver,
        "nv-fabricmanager": image.driver and image.fabric_manager,
        "nvidia-imex": image.driver if image.imex is None else image.driver and image.imex,
        "enroot": image.enroot,
        "dcgm-exporter": image.dcgm_exporter,
    }
    for name, there in present.items():
        if there:
            shutil.copy(path / "pending" / name, path / "dynbin" / name)
    # fi_info is a stub always on PATH in the stub dir only when EFA is there.
    if not image.efa:
        (path / "stubs" / "fi_info").unlink()

    root = path / "root"
    os_id, version = ("amzn", "2023") if ctx.os == "al2023" else ("ubuntu", ctx.os.split("-")[1])
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc/os-release").write_text(f'NAME="test"\nID={os_id}\nVERSION_ID="{version}"\n')
    if image.efa:
        (root / "opt/amazon").mkdir(parents=True, exist_ok=True)
        (root / "opt/amazon/efa_installed_packages").write_text(
            f"# EFA installer version: {image.efa_version}\n# Debug packages installed: no\n")
        libdir = "lib64" if ctx.os == "al2023" else "lib"
        ofi = image.ofi_nccl_files
        if ofi is None:
            ofi = (f"/opt/amazon/ofi-nccl/{libdir}/libnccl-net-ofi.so", f"/opt/amazon/ofi-nccl/{libdir}/libnccl-ofi-tuner.so")
        for lib in ofi:
            target = root / lib.format(arch=ctx.arch).lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("ELF\n")
    for unit in image.unit_files():
        (root / "usr/lib/systemd/system").mkdir(parents=True, exist_ok=True)
        (root / "usr/lib/systemd/system" / unit).write_text(IMAGE_UNIT)
        (path / "state" / f"enabled-{unit}").touch()
    if image.packages:
        (path / "state/pkgdb").mkdir(exist_ok=True)
        for name, version in image.packages.items():
            (path / "state/pkgdb" / name).write_text(version + "\n")
    for file, content in image.sources.items():
        (root / file.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / file.lstrip("/")).write_text(content)
    if image.nvlsm:  # with the InfiniBand tools ParallelCluster's nvidia_nvlsm recipe installs beside it
        (root / "opt/nvidia/nvlsm/sbin").mkdir(parents=True, exist_ok=True)
        (root / "opt/nvidia/nvlsm/sbin/nvlsm").write_text("ELF\n")
        (path / "state/pkgdb").mkdir(exist_ok=True)
        for name in REAL.nvlsm.infiniband_packages[ctx.os_family]:
            (path / "state/pkgdb" / name).write_text("1.0\n")
    if not image.persistence_mode:
        (path / "state/persistence-off").touch()
    if image.data_volume is not None:  # a Kubernetes node: containerd's and kubelet's data, the mounted volume
        (root / "var/lib/containerd/io.containerd.content.v1.content/blobs").mkdir(parents=True)
        (root / "var/lib/containerd/io.containerd.content.v1.content/blobs/pause").write_text("layer\n")
        (root / "var/lib/kubelet/pki").mkdir(parents=True)
        (root / "var/lib/kubelet/pki/kubelet.crt").write_text("cert\n")
        (root / "var/lib/kubelet/.hidden-state").write_text("state\n")
        volume = root / image.data_volume.lstrip("/")
        volume.mkdir(parents=True)
        (path / "state/mounted").mkdir(parents=True, exist_ok=True)
        (path / "state/mounted" / str(volume).replace("/", "_")).touch()
    if image.container_toolkit:
        (root / "usr/bin").mkdir(parents=True, exist_ok=True)
        (root / "usr/bin/nvidia-container-runtime").write_text("#!/bin/sh\n")
        (root / "usr/bin/nvidia-container-runtime").chmod(0o755)
    for i in range(image.nvme_drives):
        dev = root / f"sys/block/nvme{i + 1}n1/device"
        dev.mkdir(parents=True)
        (dev / "model").write_text("Amazon EC2 NVMe Instance Storage        \n")
    for i in range(image.efa_devices):
        counters = root / f"sys/class/infiniband/rdmap{16 + i}s27/ports/1/hw_counters"
        counters.mkdir(parents=True)
        (counters / "rdma_read_bytes").write_text(f"{1000 + i}\n")
    if image.node_exporter:  # a node_exporter the real pin's digest could never match a fake of
        (root / "usr/local/bin").mkdir(parents=True, exist_ok=True)
        (root / "usr/local/bin/node_exporter").write_text("#!/bin/sh\necho 'node_exporter, version 1.9.1 (branch: HEAD)'\n")
        (root / "usr/local/bin/node_exporter").chmod(0o755)
        (root / "usr/local/bin/prometheus").write_text(
            f"#!/bin/sh\necho 'prometheus, version {ctx.versions.prometheus.version} (branch: HEAD)'\n")
        (root / "usr/local/bin/prometheus").chmod(0o755)
    if ctx.slurm_metrics:  # the controller's Slurm clients (support.slurm_stubs: nothing queued, no nodes yet)
        slurm_stubs.install(root / ctx.options.slurm_prefix.lstrip("/") / "bin")
    if image.pyxis:
        (root / "usr/local/lib/slurm").mkdir(parents=True)
        (root / "usr/local/lib/slurm/spank_pyxis.so").touch()
    (root / "proc").mkdir()
    (root / "proc/devices").write_text("Character devices:\n195 nvidia\n234 nvidia-caps-imex-channels\n")
    if ctx.flavour == "hyperpod":  # HyperPod's own description of the cluster (keys as AWS's lifecycle scripts read them)
        (root / "opt/ml/config").mkdir(parents=True)
        (root / "opt/ml/config/resource_config.json").write_text(json.dumps({
            "ClusterConfig": {"ClusterArn": "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef012345",
                              "ClusterName": ctx.project},
            "InstanceGroups": [{"Name": ctx.group or "controller", "Instances": [
                {"InstanceName": "node-1", "InstanceId": "i-0123456789abcdef0", "CustomerIpAddress": "10.0.0.5"}]}]}))
    madison = path / "madison"
    madison.mkdir()
    v = ctx.versions
    deb_versions = {v.nvidia_driver.version: "-1ubuntu1", v.dcgm.version: "-1"}
    def carry(name: str, version: str) -> None:  # NVIDIA's repository carries NAME at VERSION
        with (madison / name).open("a") as f:
            f.write(version + "\n")

    for comp in (v.nvidia_driver, v.fabric_manager, v.nvidia_imex, v.dcgm):
        for entry in comp.names("ubuntu"):
            names = entry.split("|")
            epoch = "1:" if comp is v.dcgm else ""
            carry(names[min(image.repo_names, len(names) - 1)], f"{epoch}{comp.version}{deb_versions[comp.version]}")
    if image.driver_version != v.nvidia_driver.version:  # the repository also carries the image's driver branch
        branch = image.driver_version.split(".")[0]
        for comp in (v.fabric_manager, v.nvidia_imex):
            for entry in comp.packages["ubuntu"]:
                names = entry.replace("{branch}", branch).split("|")
                carry(names[min(image.repo_names, len(names) - 1)], f"{image.driver_version}-1ubuntu1")
    for exporter in dict.fromkeys([v.dcgm_exporter.version, *v.dcgm_exporter.builds.values()]):
        carry(v.dcgm_exporter.package, f"{exporter}-1")  # every build of the map, as NVIDIA's repository has them
    carry(v.nvlsm.package, "2025.10.0-1")
    (root / "opt/slurm/include/slurm").mkdir(parents=True)
    (root / "opt/slurm/include/slurm/spank.h").write_text("/* spank */\n")
    if image.gdrcopy:
        (path / "state/has-gdrcopy").touch()
        (path / "state/modules").write_text("gdrdrv 16384 0\n")
    if image.lustre:
        (path / "state/has-lustre").touch()
    (path / "state/apt-has-lustre-client-modules-6.8.0-1024-aws").touch()  # the FSx repository covers uname -r

    artifacts = fake_artifacts(ctx.arch)
    for name, content in artifacts.items():
        (path / "files" / name).write_bytes(content)

    bundle = path / "bundle"
    manifest = render.render_bundle(ctx, bundle)
    instance = ctx.instance
    env = {
        "PATH": f"{path / 'stubs'}:{path / 'dynbin'}:{path / 'safebin'}",
        "SANDBOX": str(path),
        "FMC_ROOT": str(root),
        "FMC_RETRY_BASE_DELAY": "1",
        "HOME": str(path / "tmp"),
        "TMPDIR": str(path / "tmp"),
        "LANG": "C",
        "T_ARCH": ctx.arch,
        "T_ITYPE": itype or (instance.instance_type if instance else "m7i.4xlarge"),
        "T_GPUS": str(image.gpus),
        "T_GPU_NAME": image.gpu_name,
        "T_DRIVER": image.driver_version,
        "T_EFA_COUNT": str(image.efa_devices),
        "T_EFA_FPR": EFA_FPR,
        "T_LUSTRE_FPR": LUSTRE_FPR,
        "T_NV_FPR": ctx.nvidia_repo_key.fingerprint,
    }
    return Sandbox(path, bundle, manifest, env)


def calls_of(result: Result, command: str) -> list[str]:
    return [c for c in result.calls if c == command or c.startswith(command + " ")]



# --- Slurm's controller with accounting (slurmctld + slurmdbd), for the slurm-policy step ----------------------------
# State under ${SANDBOX}/state/slurm: qos (one QoS name a line), partitions/<name> (the partition's QoS, N/A when
# none), dbd-down (slurmdbd does not answer), ctld-down (slurmctld does not answer).
SACCTMGR_STUB = f"""
# slurmdbd's state as sacctmgr sees it: support.slurm_stubs.sacctmgr (stateful; refuses what the real one does)
exec python3 {str(Path(__file__).with_name("slurm_stubs.py"))!r} "${{state}}/slurm" "$@"
"""
SCONTROL_STUB = r"""
s="${state}/slurm"
if [[ "${1:-}" != ping && -e "${s}/ctld-down" ]]; then
  echo "slurm_load_partitions error: Unable to contact slurm controller (connect failure)" >&2; exit 1
fi
case "${1:-} ${2:-}" in
  "ping "*)
    if [[ -e "${s}/ctld-down" ]]; then echo "Slurmctld(primary) at ip-10-1-2-3 is DOWN"; exit 1; fi
    echo "Slurmctld(primary) at ip-10-1-2-3 is UP" ;;
  "reconfigure "*) ;;
  "show config")
    printf 'Configuration data as of 2026-01-01T00:00:00\n'
    printf 'SlurmUser               = slurm(401)\n'
    printf 'SlurmctldPort           = 6817\n' ;;
  "show partition")
    p=${3:-}
    [[ -n "${p}" && -f "${s}/partitions/${p}" ]] || { echo "Partition ${p} not found"; exit 1; }
    printf 'PartitionName=%s\n' "${p}"
    printf '   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n'
    printf '   AllocNodes=ALL Default=YES QoS=%s\n' "$(<"${s}/partitions/${p}")"
    printf '   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO ExclusiveTopo=NO GraceTime=0 Hidden=NO\n'
    printf '   Nodes=%s-st-[1-2] State=UP TotalCPUs=384 TotalNodes=2\n' "${p}" ;;
  "update "*)
    p=""; q=""
    for a in "${@:2}"; do
      case "${a}" in
        PartitionName=*) p=${a#*=} ;;
        QOS=*|QoS=*|qos=*) q=${a#*=} ;;
        *) echo "scontrol: error: Update of this parameter is not supported: ${a}" >&2; exit 1 ;;
      esac
    done
    [[ -n "${p}" && -f "${s}/partitions/${p}" ]] \
      || { echo "scontrol: error: Invalid partition name specified" >&2; exit 1; }
    grep -qixF -- "${q}" "${s}/qos" || { echo "scontrol: error: Invalid qos specification" >&2; exit 1; }
    echo "${q}" >"${s}/partitions/${p}" ;;
  *) echo "invalid keyword: ${1:-}" >&2; exit 1 ;;
esac
"""
"""scontrol as slurmctld 25.11 answers: `show partition` prints QoS=N/A until one is set, beside AllowQos=ALL
(slurm_sprint_partition_info's layout; the exact column order is UNCONFIRMED, the step reads only the QoS= word);
`update` fails for an unknown partition ("Invalid partition name specified") or QoS ("Invalid qos specification"),
as the real one does (exit 1; the messages are slurm_strerror's as recalled, their wording UNCONFIRMED)."""

STRIGGER_STUB = r"""
s="${state}/slurm"
[[ -e "${s}/ctld-down" ]] && { echo "strigger: error: Unable to contact slurm controller" >&2; exit 1; }
case " $* " in
  *" --get "*)
    printf 'TRIG_ID RES_TYPE   RES_ID TYPE                                OFFSET USER     FLAGS PROGRAM\n'
    [[ -f "${s}/triggers" ]] && cat "${s}/triggers" ;;
  *" --set "*)
    [[ "${RUNUSER:-root}" == slurm ]] || { echo "strigger: error: Access/permission denied" >&2; exit 1; }
    prog=""
    for a in "$@"; do [[ "${a}" == --program=* ]] && prog=${a#--program=}; done
    n=$(( $( [[ -f "${s}/triggers" ]] && wc -l <"${s}/triggers" || echo 0) + 1 ))
    printf '%7s node            * reconfig                                 0 slurm    PERM  %s\n' "${n}" "${prog}" \
      >>"${s}/triggers" ;;
  *) echo "strigger: error: unrecognized option" >&2; exit 1 ;;
esac
"""
"""strigger(1) as slurmctld answers it: ``--get`` lists the triggers (its column layout as Slurm 22.05's strigger
prints it); ``--set`` is refused unless run as SlurmUser (``slurm`` here, through the runuser stub), as strigger(1)
says."""

SLURMCTLD_UNIT = ("[Unit]\nDescription=Slurm controller daemon\nAfter=network.target munge.service\n"
                  "Wants=network-online.target\nConditionPathExists=/opt/slurm/etc/slurm.conf\n\n[Service]\n"
                  "Type=simple\nEnvironmentFile=-/etc/sysconfig/slurmctld\n"
                  "ExecStart=/opt/slurm/sbin/slurmctld -D -s $SLURMCTLD_OPTIONS\nExecReload=/bin/kill -HUP $MAINPID\n"
                  "LimitNOFILE=562930\nLimitMEMLOCK=infinity\nLimitSTACK=infinity\n\n[Install]\n"
                  "WantedBy=multi-user.target\n")
"""ParallelCluster's slurmctld.service with /opt/slurm (aws/aws-parallelcluster-cookbook@
51cae4d07e5b73e7d61efbfcac2f4bafc38dd9ad cookbooks/aws-parallelcluster-slurm/templates/default/slurm/head_node/
slurmctld.service.erb); HyperPod's is UNCONFIRMED and modelled the same."""


def install_slurm_controller(sb: Sandbox, partitions: tuple[str, ...], *, prefix: str = "/opt/slurm",
                             unit_dir: str | None = "etc/systemd/system", qos: tuple[str, ...] = ("normal",),
                             dbd_up: bool = True) -> None:
    """What the orchestrator leaves on the node that runs slurmctld before the bundle: Slurm's clients under
    ``prefix``, slurmctld.service's unit in ``unit_dir`` (None: none), the partitions of slurm.conf without a QoS,
    and slurmdbd's QoS (Slurm creates ``normal``: SchedMD qos.html, "a QOS named normal is created by default")."""
    bindir = sb.root / prefix.lstrip("/") / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    _write_stub(bindir / "sacctmgr", SACCTMGR_STUB)
    _write_stub(bindir / "scontrol", SCONTROL_STUB)
    _write_stub(bindir / "strigger", STRIGGER_STUB)
    state = sb.path / "state/slurm"
    (state / "partitions").mkdir(parents=True, exist_ok=True)
    for p in partitions:
        (state / "partitions" / p).write_text("N/A\n")
    (state / "qos").write_text("".join(f"{q}\n" for q in qos))
    if not dbd_up:
        (state / "dbd-down").touch()
    if unit_dir is not None:
        (sb.root / unit_dir).mkdir(parents=True, exist_ok=True)
        (sb.root / unit_dir / "slurmctld.service").write_text(SLURMCTLD_UNIT)


def restart_slurmctld(sb: Sandbox) -> None:
    """slurmctld restarted without -R: its partitions come back from slurm.conf, without the runtime QoS."""
    for f in (sb.path / "state/slurm/partitions").iterdir():
        f.write_text("N/A\n")
