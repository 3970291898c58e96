"""Monitor: broker metrics sampled into snapshots on disk (Parquet), the input of the analysis.

``names`` lists every metric a snapshot reads (the JMX exporter's names for Kafka's MBeans),
``schema`` the versioned Parquet layout, ``sources`` where samples come from (Prometheus, the
backend alone, earlier snapshot files), ``snapshot`` the workflow step that appends a window to
the dataset, and ``estimate`` per-partition loads from snapshots (Cruise Control's way) for the
load seam without Spark. No Airflow or Spark imports here.
"""
