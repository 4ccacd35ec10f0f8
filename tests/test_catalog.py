"""The catalog against FACTS.md's rules and against an independent copy of EC2's data (moto's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from moto.ec2.models.instance_types import INSTANCE_TYPES as MOTO_TYPES

from fmcluster import catalog
from fmcluster.plan import efa_layout

ALL = sorted(catalog.CATALOG)


@pytest.mark.parametrize("name", ALL)
def test_card0_rule_matches_parallelcluster(name: str) -> None:
    # ParallelCluster's rule: card 0 carries EFA iff MaximumEfaInterfaces == MaximumNetworkCards.
    t = catalog.get(name)
    assert t.card0_carries_efa == (t.max_efa_interfaces == t.network_cards)


@pytest.mark.parametrize("name", ALL)
def test_per_card_limits_cover_every_card(name: str) -> None:
    t = catalog.get(name)
    assert len(t.max_enis_per_card) == t.network_cards


@pytest.mark.parametrize("name", [n for n in ALL if n in MOTO_TYPES])
def test_catalog_agrees_with_ec2_data(name: str) -> None:
    """moto bundles DescribeInstanceTypes output; our hand-kept figures must agree with it."""
    t, ec2 = catalog.get(name), MOTO_TYPES[name]
    net = ec2["NetworkInfo"]
    assert t.network_cards == net["MaximumNetworkCards"]
    assert t.max_efa_interfaces == net["EfaInfo"]["MaximumEfaInterfaces"]
    assert t.gpus == ec2["GpuInfo"]["Gpus"][0]["Count"]
    assert t.vcpus == ec2["VCpuInfo"]["DefaultVCpus"]
    assert t.memory_gib * 1024 == ec2["MemoryInfo"]["SizeInMiB"]
    assert t.architecture == ec2["ProcessorInfo"]["SupportedArchitectures"][0]
    assert t.ipv4_per_interface == net["Ipv4AddressesPerInterface"]
    for card in net["NetworkCards"]:
        known = t.max_enis_per_card[card["NetworkCardIndex"]]
        if known is not None:
            assert known == card["MaximumNetworkInterfaces"], f"card {card['NetworkCardIndex']}"


def test_moto_lacks_only_gb200() -> None:
    # FACTS.md section 8: moto has p4d..p6-b300 but not p6e-gb200; if that changes, compare it too.
    assert [n for n in ALL if n not in MOTO_TYPES] == ["p6e-gb200.36xlarge"]


def test_unconfirmed_figures_are_none() -> None:
    gb200 = catalog.get("p6e-gb200.36xlarge")
    for field in ("vcpus", "memory_gib", "local_nvme_drives", "local_nvme_drive_gb", "nvlink_generation"):
        assert getattr(gb200, field) is None, field
    assert gb200.gpu_memory_total_gb == 740


def test_gb200_figures_agree_with_their_sources() -> None:
    """FACTS.md: NVIDIA's NVL72 datasheet gives 360 PF BF16 / 720 PF FP8 with sparsity for 72 GPUs (dense is half);
    AWS gives 360 PF FP8 dense, 13.4 TB HBM and 405 TB NVMe per u-p6e-gb200x72 (18 instances)."""
    gb200 = catalog.get("p6e-gb200.36xlarge")
    x72 = next(u for u in gb200.ultraservers if u.name == "u-p6e-gb200x72")
    gpus = x72.instances * gb200.gpus
    assert gpus == 72
    assert gpus * gb200.bf16_dense_pflops_per_gpu * 2 == 360
    assert gpus * gb200.fp8_dense_pflops_per_gpu == 360 and gpus * gb200.fp8_dense_pflops_per_gpu * 2 == 720
    assert x72.instances * gb200.local_nvme_total_gb == 405_000
    assert gpus * gb200.hbm_bandwidth_tbps_per_gpu == 576
    assert x72.instances * gb200.gpu_memory_total_gb / 1000 == pytest.approx(13.4, abs=0.1)
    assert gb200.bf16_dense_pflops == gb200.gpus * gb200.bf16_dense_pflops_per_gpu


@pytest.mark.parametrize("name", [n for n in ALL if n != "p6e-gb200.36xlarge"])
def test_nvme_total_is_drives_times_size(name: str) -> None:
    t = catalog.get(name)
    assert t.local_nvme_total_gb == t.local_nvme_drives * t.local_nvme_drive_gb


@pytest.mark.parametrize("name", ALL)
def test_layout_fits_each_cards_interface_limit(name: str) -> None:
    t = catalog.get(name)
    for nic in efa_layout(t):
        limit = t.max_enis_per_card[nic.card]
        assert limit is None or nic.device < limit, f"card {nic.card} device {nic.device} exceeds {limit}"


FIGURES = ("0.9895", "1.979", "1.555", "0.312", "3.35", "13.5", "14.4", "2.25", "4.8", "740", "186", "22500", "22_500")


def test_figures_have_one_source() -> None:
    """Nothing outside the catalog restates an instance figure (a distinctive subset is scanned)."""
    package = Path(catalog.__file__).parent
    offenders = []
    for path in package.rglob("*"):
        if path.suffix not in (".py", ".j2", ".yaml", ".sh") or path.name == "catalog.py":
            continue
        text = path.read_text(encoding="utf-8")
        for figure in FIGURES:
            if re.search(rf"(?<![\w.]){re.escape(figure)}(?![\w.])", text):
                offenders.append(f"{path.relative_to(package)}: {figure}")
    assert not offenders, offenders


@pytest.mark.parametrize("name", [n for n in ALL if n in MOTO_TYPES])
def test_nvme_drive_count_agrees_with_ec2_data(name: str) -> None:
    disks = MOTO_TYPES[name]["InstanceStorageInfo"]["Disks"]
    assert catalog.get(name).local_nvme_drives == sum(d["Count"] for d in disks)


def test_only_hgx_nvswitch_types_need_nvlsm() -> None:
    """nvlsm manages fourth-generation NVSwitch trays of HGX systems (Fabric Manager user guide 2.3, "Systems Using
    Fourth Generation NVSwitches"); GB200's NVLink domain is IMEX's, p5.4xlarge has no NVSwitch. The bootstrap reads
    ``needs_nvlsm`` alone, so the flag must never sit on a type without NVSwitches or with IMEX."""
    wrong = [n for n, t in catalog.CATALOG.items() if t.needs_nvlsm and (not t.nvswitch or t.needs_imex)]
    assert not wrong, wrong


def test_p5_4xlarge_is_one_h100_without_nvswitch() -> None:
    """FACTS.md section 1: 1 x H100 80 GB, 1 x 3,800 GB NVMe, one card at 100 Gbps with one EFA interface."""
    t, ec2 = catalog.get("p5.4xlarge"), MOTO_TYPES["p5.4xlarge"]
    assert (t.gpus, t.gpu_memory_gb * 1024) == (1, ec2["GpuInfo"]["TotalGpuMemoryInMiB"])
    assert t.local_nvme_total_gb == ec2["InstanceStorageInfo"]["TotalSizeInGB"]
    assert not t.nvswitch and t.nvlinks_per_gpu is None and t.nvlink_generation is None
    assert t.efa_gbps_per_interface == 100
    assert set(ec2["SupportedUsageClasses"]) >= {"on-demand", "spot", "capacity-block"}
    assert "cluster" in ec2["PlacementGroupInfo"]["SupportedStrategies"]


def test_hyperpod_types_are_the_catalog_types_in_sagemakers_enum() -> None:
    """catalog.HYPERPOD_TYPES is exactly what botocore's sagemaker model offers (ClusterInstanceType)."""
    import botocore.session

    enum = botocore.session.get_session().get_service_model("sagemaker").shape_for("ClusterInstanceType").enum
    assert catalog.HYPERPOD_TYPES == {n for n in ALL if catalog.hyperpod_type(n) in enum}
