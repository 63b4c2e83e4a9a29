"""Replay: real traffic, archived and in flight, checked against a candidate contract (docs/replay.md)."""
