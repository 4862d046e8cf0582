"""Prefect orchestration of the DVC pipelines: one flow per paper, built from DVC's stage graph."""
