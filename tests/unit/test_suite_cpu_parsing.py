"""benchmarks/suite_cpu.py reads ``dump-acct``'s listing (acct 6.6, format v3: times in clock ticks)."""

from __future__ import annotations

from benchmarks.suite_cpu import TICKS, by_command, parse_dump_acct

LISTING = [
    f"java            |v3|  {50 * TICKS:.2f}|  {10 * TICKS:.2f}|  {90 * TICKS:.2f}|     0|     0| 2476.00|   667.00|   1201|      1|     |       0|__      |Fri Nov 27 23:26:12 2026",
    f"java            |v3|   {3 * TICKS:.2f}|   {1 * TICKS:.2f}|   {9 * TICKS:.2f}|     0|     0| 2476.00|   667.00|   1202|   1100|     |       0|__      |Fri Nov 27 23:26:13 2026",
    f"airflow api_ser |v3|  {12 * TICKS:.2f}|   {2 * TICKS:.2f}|  {60 * TICKS:.2f}|     0|     0| 2476.00|   667.00|   1203|   1100|S    |       0|__      |Fri Nov 27 23:26:14 2026",
    "not a process line",
    "java            |v3|  n/a|  0.00|  0.00|     0|     0| 0| 0|   x|   y|     |       0|__      |Fri Nov 27 23:26:15 2026",
]


def test_each_process_is_read_with_its_cpu_in_seconds_and_odd_lines_are_skipped() -> None:
    processes = parse_dump_acct(LISTING)
    assert [(p["command"], p["cpu"], p["elapsed"], p["pid"], p["ppid"]) for p in processes] == [
        ("java", 60.0, 90.0, 1201, 1),
        ("java", 4.0, 9.0, 1202, 1100),
        ("airflow api_ser", 14.0, 60.0, 1203, 1100),
    ]


def test_cpu_is_summed_by_command_largest_first() -> None:
    totals = by_command(parse_dump_acct(LISTING))
    assert list(totals) == ["java", "airflow api_ser"]
    assert totals["java"] == {"cpu": 64.0, "processes": 2}
