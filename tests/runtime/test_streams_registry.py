"""streams_registry and the registry helpers: registered and entry-point Streams build datasets."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap

import catalogue
import pytest

from streaming import Stream, StreamingDataset
from streaming.base.registry_utils import (
    construct_from_registry,
    create_registry,
    import_file,
    save_registry,
)
from streaming.base.stream import streams_registry


class TaggedStream(Stream):
    """A Stream subclass with one argument of its own, as a user's plugin would have."""

    def __init__(self, *, tag: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tag = tag


def test_a_registered_stream_builds_the_dataset(token_dataset, tmp_path) -> None:
    with save_registry():
        streams_registry.register("tagged", func=TaggedStream)
        config = {"tag": "mine"}
        ds = StreamingDataset(local=token_dataset, stream_name="tagged", stream_config=config,
                              batch_size=4)
        assert "tagged" in streams_registry.get_all()
    assert "tagged" not in streams_registry.get_all()  # save_registry restored it
    (stream,) = ds.streams
    assert type(stream) is TaggedStream and stream.tag == "mine"
    assert stream.local == token_dataset
    assert config == {"tag": "mine"}  # the caller's dict is left as it was
    assert [ds[i]["id"] for i in range(3)] == [0, 1, 2]


def test_an_unknown_stream_name_names_what_is_registered(token_dataset) -> None:
    with pytest.raises(catalogue.RegistryError, match="stream"):
        StreamingDataset(local=token_dataset, stream_name="no-such-stream")


def test_the_default_stream_is_registered() -> None:
    assert streams_registry.get("stream") is Stream
    assert streams_registry.entry_points and streams_registry.description


def test_a_namespace_that_holds_an_item_is_refused() -> None:
    # As in the reference (catalogue.check_exists): a namespace is taken once something is
    # registered under exactly that path.
    with save_registry():
        reg = create_registry("shardstream_test", "once", generic_type=int)
        create_registry("shardstream_test", "once", generic_type=int)  # still empty: allowed
        reg.register("item", func=int)
        with pytest.raises(catalogue.RegistryError, match="already exists"):
            create_registry("shardstream_test", "once", "item", generic_type=int)


def test_construct_calls_classes_and_binds_functions() -> None:
    def scaled(x: int, factor: int) -> int:
        return x * factor

    seen = []
    with save_registry():
        reg = create_registry("shardstream_test", "things", generic_type=object)
        reg.register("scaled", func=scaled)
        reg.register_class("tagged", func=TaggedStream)
        bound = construct_from_registry("scaled", reg, kwargs={"factor": 3},
                                        post_validation_function=seen.append)
        assert isinstance(bound, functools.partial) and bound(5) == 15
        assert seen == [bound]
        assert construct_from_registry("scaled", reg, partial_function=False,
                                       kwargs={"x": 2, "factor": 4}) == 8
        with pytest.raises(ValueError, match="Expected scaled to be of type"):
            construct_from_registry("scaled", reg, pre_validation_function=Stream)
        with pytest.raises(ValueError, match="callable or a type"):
            construct_from_registry("scaled", reg, pre_validation_function=3)  # type: ignore
        reg.register("constant", func=7)
        with pytest.raises(ValueError, match="class or function"):
            construct_from_registry("constant", reg)

        def refuse(item: object) -> None:
            raise ValueError(f"refused {item}")

        with pytest.raises(ValueError, match="refused"):
            construct_from_registry("scaled", reg, pre_validation_function=refuse)


def test_import_file_runs_registrations(tmp_path) -> None:
    with save_registry():
        reg = create_registry("shardstream_test", "files", generic_type=object)
        code = tmp_path / "plugin.py"
        code.write_text("from catalogue import _set\n"
                        "_set(['shardstream_test', 'files', 'seven'], 7)\n")
        import_file(code)
        assert reg.get("seven") == 7
        broken = tmp_path / "broken.py"
        broken.write_text("raise KeyError('inside the plugin')\n")
        with pytest.raises(RuntimeError, match="broken.py") as info:
            import_file(broken)
        assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(FileNotFoundError, match="missing.py"):
        import_file(tmp_path / "missing.py")


def test_an_entry_point_stream_builds_the_dataset(token_dataset, tmp_path) -> None:
    # A separately installed package that registers its Stream through the entry-point group,
    # seen by a fresh interpreter (entry points are read when catalogue is imported).
    site = tmp_path / "site"
    (site / "shardplug-0.1.dist-info").mkdir(parents=True)
    (site / "shardplug-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: shardplug\nVersion: 0.1\n")
    (site / "shardplug-0.1.dist-info" / "entry_points.txt").write_text(
        "[streaming_streams_registry]\nplugged = shardplug:PluggedStream\n")
    (site / "shardplug.py").write_text(textwrap.dedent("""
        from streaming import Stream

        class PluggedStream(Stream):
            pass
    """))
    script = textwrap.dedent(f"""
        from streaming import StreamingDataset
        ds = StreamingDataset(local={token_dataset!r}, stream_name="plugged", batch_size=4)
        print(type(ds.streams[0]).__name__, ds[5]["id"])
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.split() == ["PluggedStream", "5"]


def test_on_exception_reraises_a_failed_task(token_dataset) -> None:
    from concurrent.futures import ThreadPoolExecutor

    ds = StreamingDataset(local=token_dataset, batch_size=4)
    with ThreadPoolExecutor(1) as pool:
        ok = pool.submit(lambda: 1)
        failed = pool.submit(lambda: {}["missing"])
        ok.result()
        ds.on_exception(ok)  # nothing to raise
        with pytest.raises(KeyError, match="missing"):
            ds.on_exception(failed)
