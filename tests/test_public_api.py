"""The package's public names: exported explicitly, each resolvable, every registered method's classes among them."""

from __future__ import annotations

import hf_textcluster
from hf_textcluster.models import METHODS


def test_every_public_name_resolves():
    for name in hf_textcluster.__all__:
        assert getattr(hf_textcluster, name) is not None, name


def test_every_registered_methods_classes_are_exported():
    listed = set(hf_textcluster.__all__)
    for method in METHODS.values():
        for cls in (method.config_class, method.model_class, method.trainer_class):
            assert cls.__name__ in listed, cls.__name__
            assert getattr(hf_textcluster, cls.__name__) is cls
    assert {"SCCLModel", "DECMLMTrainer", "ClusterBERTConfig"} <= listed


def test_an_unknown_name_is_an_attribute_error():
    try:
        hf_textcluster.NoSuchModel  # noqa: B018
    except AttributeError as err:
        assert "NoSuchModel" in str(err)
    else:
        raise AssertionError("expected AttributeError")


def test_all_lists_exactly_the_lazy_and_eager_exports():
    assert set(hf_textcluster._LAZY) <= set(hf_textcluster.__all__)
    assert len(hf_textcluster.__all__) == len(set(hf_textcluster.__all__))


def test_shipped_remote_code_is_the_modeling_set_plus_the_method():
    """A pushed repository carries modeling/ and its method's configuration/modeling files, nothing that resolves
    pip-shipped encoders."""
    from pathlib import Path

    from hf_textcluster.models.remote_code import remote_code_files

    modeling = {p.name for p in (Path(hf_textcluster.__file__).parent / "modeling").glob("*.py")} - {"__init__.py"}
    for name in METHODS:
        shipped = set(remote_code_files(name))
        assert shipped - modeling == {f"configuration_{name}.py", f"modeling_{name}.py"}, shipped - modeling
        assert not {"encoders.py", "cache.py"} & shipped
