"""What every Spark driver the platform launches is told at its start (contract_platform/jvm.py)."""

from __future__ import annotations

from contract_platform.jvm import LOG4J2_CONFIG, driver_java_options, local_driver_environment


def test_a_local_driver_binds_to_loopback_unless_the_user_chose_an_address() -> None:
    for master in (None, "local", "local[*]", "local[2,3]", " local[4]"):
        assert local_driver_environment(master, {}) == {"SPARK_LOCAL_IP": "127.0.0.1"}, master
    assert local_driver_environment("local[*]", {"SPARK_LOCAL_IP": "10.0.0.5"}) == {}
    for master in ("spark://spark-master:7077", "yarn", "k8s://https://kubernetes:443"):
        assert local_driver_environment(master, {}) == {}, master


def test_the_drivers_log_configuration_is_sparks_without_hadoops_native_library_notice() -> None:
    assert driver_java_options() == f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.resolve().as_uri()}"
    lines = LOG4J2_CONFIG.read_text().splitlines()
    assert "rootLogger.level = info" in lines and "appender.console.target = SYSTEM_ERR" in lines
    assert "logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader" in lines
    assert "logger.nativecode.level = error" in lines


def test_a_quick_start_needs_a_local_master_and_a_small_local_input(tmp_path) -> None:
    from contract_platform.jvm import QUICK_START_BYTES, quick_start

    small = tmp_path / "small"
    (small / "date=2026-11-27").mkdir(parents=True)
    (small / "date=2026-11-27" / "part-0.jsonl").write_bytes(b"{}\n" * 10)
    large = tmp_path / "large.jsonl"
    with large.open("wb") as out:
        out.truncate(QUICK_START_BYTES + 1)
    assert quick_start("local[*]", str(small)) and quick_start(None, f"file://{small}")
    assert not quick_start("local[*]", str(large))
    assert not quick_start("spark://spark-master:7077", str(small))
    for elsewhere in ("hdfs://namenode/archive", "s3a://bucket/archive", str(tmp_path / "missing"), "", None):
        assert not quick_start("local[*]", elsewhere), elsewhere


def test_the_first_driver_writes_the_class_archive_and_the_next_ones_map_it(tmp_path) -> None:
    import os

    from contract_platform.jvm import class_archive

    env = {**os.environ, "CONTRACT_JVM_CLASS_CACHE": str(tmp_path)}
    writer = class_archive(env)
    assert writer is not None and writer.writing is not None
    assert writer.options[-1] == f"-XX:ArchiveClassesAtExit={writer.writing}"
    assert class_archive(env) is None  # a second driver while the first writes: it starts without one
    assert class_archive(env, write=False) is None  # a long-lived JVM only maps an archive that is there

    writer.writing.write_bytes(b"classes")  # what the JVM writes at its exit
    writer.finish(exited=True)

    reader = class_archive(env)
    assert reader is not None and reader.writing is None and reader.path == writer.path
    assert class_archive(env, write=False) == reader
    assert reader.options[-1] == f"-XX:SharedArchiveFile={writer.path}"
    assert [p.name for p in tmp_path.iterdir()] == [writer.path.name]  # nothing half-written is left


def test_a_driver_killed_while_writing_leaves_no_archive_and_a_stale_claim_is_taken_over(tmp_path) -> None:
    import os
    import time

    from contract_platform.jvm import class_archive

    env = {**os.environ, "CONTRACT_JVM_CLASS_CACHE": str(tmp_path)}
    killed = class_archive(env)
    assert killed is not None and killed.writing is not None
    killed.writing.write_bytes(b"half")
    killed.finish(exited=False)  # killed by a signal: what it wrote is not trusted
    assert list(tmp_path.iterdir()) == []

    abandoned = class_archive(env)  # a driver that never came back: its claim stays
    assert abandoned is not None and abandoned.writing is not None
    assert class_archive(env) is None
    an_hour_ago = time.time() - 3601
    os.utime(abandoned.writing, (an_hour_ago, an_hour_ago))
    taken_over = class_archive(env)
    assert taken_over is not None and taken_over.writing == abandoned.writing


def test_the_class_archive_can_be_switched_off_and_needs_a_folder_a_java_option_can_name(tmp_path) -> None:
    import os

    from contract_platform.jvm import class_archive

    assert class_archive({**os.environ, "CONTRACT_JVM_CLASS_CACHE": "off"}) is None
    assert class_archive({**os.environ, "CONTRACT_JVM_CLASS_CACHE": str(tmp_path / "with space")}) is None
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert class_archive({**os.environ, "CONTRACT_JVM_CLASS_CACHE": str(blocked / "cache")}) is None
