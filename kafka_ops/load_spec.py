"""A load source from its spec string: what ``kafka-ops plan --loads`` and the workflow's plan
step (through XCom) name. Kept apart from kafka_ops.loads so that the seam does not depend on
the metric snapshots that implement one of its sources (kafka_ops.monitor depends on the seam).
"""

from __future__ import annotations

from pathlib import Path

from kafka_ops.errors import ValidationError
from kafka_ops.loads import (
    ANALYSIS_SUMMARY,
    AnalysisOutputSource,
    LoadsFileSource,
    LoadSource,
    ModelFieldsSource,
)
from kafka_ops.monitor.estimate import SnapshotLoadSource


def load_source_from_spec(spec: str) -> LoadSource:
    """``fields`` | ``file:PATH`` | ``analysis:DIR`` | ``snapshots:DIR@CLUSTER[@START..END]``.

    A bare existing directory holding a ``summary.json`` is taken as an analysis output (what
    ``kafka-ops plan --loads DIR`` passes).
    """
    kind, _, arg = spec.partition(":")
    if spec == "fields":
        return ModelFieldsSource()
    if kind == "file" and arg:
        return LoadsFileSource(arg)
    if kind == "analysis" and arg:
        return AnalysisOutputSource(arg)
    if kind == "snapshots" and arg:
        return SnapshotLoadSource.from_spec(arg)
    if (Path(spec) / ANALYSIS_SUMMARY).is_file():
        return AnalysisOutputSource(spec)
    raise ValidationError(
        f"unknown load source {spec!r}: expected fields, file:PATH, analysis:DIR, snapshots:DIR "
        f"or a balance-analysis output directory"
    )
