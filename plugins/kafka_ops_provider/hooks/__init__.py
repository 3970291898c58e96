"""Hooks: where a cluster, its metrics and the execution state live (Airflow connections only)."""
