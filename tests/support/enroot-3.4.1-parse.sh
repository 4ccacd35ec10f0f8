#!/bin/bash
# How a node pulls `srun --container-image=IMAGE`: pyxis 0.19.0 turns IMAGE into an enroot URI, and enroot 3.4.1
# parses it. Prints `squashfs=PATH`, or `registry=R image=I tag=T`; exits 1 with enroot's error where enroot refuses.
# The lines marked "verbatim" are copied from the upstream sources named (read at those tags):
#   NVIDIA/pyxis v0.19.0 pyxis_slurmstepd.c (strspn(image, "./") > 0: a squashfs file; enroot_container_create)
#   NVIDIA/enroot v3.4.1 src/docker.sh (docker::import, docker::_download)
# No credentials file: enroot's guess of the registry from ~/.config/enroot/.credentials does not apply.
set -euo pipefail

pyxis_uri() {  # pyxis's C, restated: a path, an explicit docker:// or dockerd:// URI, or else "docker://%s"
    case "$1" in
      .* | /*) printf 'squashfs=%s\n' "$1" ;;
      docker://* | dockerd://*) printf '%s\n' "$1" ;;
      *) printf 'docker://%s\n' "$1" ;;
    esac
}

enroot_import() {
    local -r uri="$1"
    local image="" registry="" tag="" user=""

    # docker::import, verbatim:
    # Parse the image reference of the form 'docker://[<user>@][<registry>#]<image>[:<tag>]'.
    local -r reg_user="[[:alnum:]_.!~*\'()%\;:\&=+$,-@]+"
    local -r reg_registry="[^#]+"
    local -r reg_image="[[:lower:][:digit:]/._-]+"
    local -r reg_tag="[[:alnum:]._:-]+"

    if [[ "${uri}" =~ ^docker://((${reg_user})@)?((${reg_registry})#)?(${reg_image})(:(${reg_tag}))?$ ]]; then
        user="${BASH_REMATCH[2]}"
        registry="${BASH_REMATCH[4]}"
        image="${BASH_REMATCH[5]}"
        tag="${BASH_REMATCH[7]}"
    else
        printf 'Invalid image reference: %s\n' "${uri}" >&2  # common::err
        return 1
    fi
    enroot_download "${user}" "${registry}" "${image}" "${tag}" ""
}

enroot_download() {
    # docker::_download, verbatim (its parameters, then Docker Hub's library/ prefix):
    local -r user="$1" registry="${2:-registry-1.docker.io}" tag="${4:-latest}" arch="$5"
    local image="$3"

    if  [[ "${image}" != */* ]] && [[ "${registry}" =~ docker\.io$ ]]; then
        image="library/${image}"
    fi
    : "${user}" "${arch}"
    printf 'registry=%s image=%s tag=%s\n' "${registry}" "${image}" "${tag}"
}

uri=$(pyxis_uri "$1")
if [[ "${uri}" == squashfs=* ]]; then
    printf '%s\n' "${uri}"
else
    enroot_import "${uri}"
fi
