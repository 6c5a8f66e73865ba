"""The torchvision zoo through the ONNX and FX importers (zoo.py,
docs/frontends.md "The zoo"): each model built for configs/host.yaml
agrees with PyTorch within 1e-4 of its output's scale.  The default run
takes one model of each family of architecture, the segmentation and
detection ones that build quickly and one video model (3-D and (2+1)-D
convolutions); LOOM_ZOO=all (the ctest entry
python.zoo_all, label long, outside scripts/test.sh: hours on two cores)
takes every one."""
import os

import pytest

pytest.importorskip("torchvision")  # every test: the zoo is torchvision's

from conftest import requires  # noqa: E402
import zoo  # noqa: E402

SAMPLE = ["squeezenet1_1", "mobilenet_v3_small", "shufflenet_v2_x0_5", "mnasnet0_5", "regnet_x_400mf",
          "efficientnet_b0", "googlenet", "densenet121", "resnet18", "alexnet", "lraspp_mobilenet_v3_large",
          "resnet18_fpn", "r2plus1d_18", "raft_small"]
MODELS = zoo.all_models() if os.environ.get("LOOM_ZOO") == "all" else SAMPLE


def test_the_sample_is_in_the_zoo():
    assert set(SAMPLE) <= set(zoo.all_models())
    assert len(zoo.classification()) >= 80


@pytest.mark.parametrize("importer", [pytest.param("onnx", marks=requires("onnx")), "fx"])
@pytest.mark.parametrize("name", MODELS)
def test_model_agrees_with_pytorch(name, importer):
    if importer == "onnx" and name in zoo.EXPORTER_FAILS:
        pytest.skip(zoo.EXPORTER_FAILS[name])
    error = zoo.check(name, importer)
    assert error <= zoo.TOLERANCE, f"{name} through {importer}: {error:.2e} of the output's scale"
