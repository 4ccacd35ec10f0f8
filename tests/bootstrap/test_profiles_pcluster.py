"""The ParallelCluster image profiles describe the AMIs of the release fmcluster generates for (PCLUSTER_VERSION):
its name, its driver and EFA installer (pcluster_facts.IMAGE_VERSIONS), and the aws-ofi-nccl layout that EFA installer
brings (>= 1.44: lib/ or lib64/libnccl-net-ofi.so and the tuner beside it; FACTS.md section 4)."""

from __future__ import annotations

import pytest
from fmcluster.bootstrap import profiles

from fmcluster import pcluster_facts

PC = [p for p in profiles.load_profiles() if p.flavour == "parallelcluster"]


def _release() -> str:
    return ".".join(pcluster_facts.PCLUSTER_VERSION.split(".")[:2])


def test_every_parallelcluster_release_line_has_its_image_versions():
    assert _release() in pcluster_facts.IMAGE_VERSIONS, (
        f"ParallelCluster {pcluster_facts.PCLUSTER_VERSION}: state its AMIs' versions in pcluster_facts.IMAGE_VERSIONS "
        "and refresh bootstrap/profiles/parallelcluster-*.yaml")
    assert {p.os for p in PC} == {"al2023", "ubuntu-22.04", "ubuntu-24.04"}


@pytest.mark.parametrize("profile", PC, ids=lambda p: p.name)
def test_the_profile_is_the_image_of_pcluster_version(profile):
    want = pcluster_facts.IMAGE_VERSIONS[_release()]
    libdir = "lib64" if profile.os == "al2023" else "lib"
    for arch, ap in profile.arches.items():
        c = ap.components
        assert f"ParallelCluster {pcluster_facts.PCLUSTER_VERSION} official AMI" in ap.image, (profile.name, arch)
        assert c.driver.version == want["nvidia_driver"], (profile.name, arch)
        assert c.efa.version == want["efa_installer"], (profile.name, arch)
        major, minor = (int(x) for x in c.efa.version.split(".")[:2])
        if (major, minor) >= (1, 44):  # the layout that EFA installer ships, not the fallback
            assert c.efa.ofi_nccl.files == [f"/opt/amazon/ofi-nccl/{libdir}/libnccl-net-ofi.so",
                                            f"/opt/amazon/ofi-nccl/{libdir}/libnccl-ofi-tuner.so"], (profile.name, arch)
            assert not c.efa.ofi_nccl.unconfirmed
        assert not c.cuda_source.present and c.cuda_source.source  # the build removes NVIDIA's local repositories
