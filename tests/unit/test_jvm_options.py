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
