"""PySpark balance analysis over metric snapshots (roadmap: metric snapshots + Spark analysis).

Kept apart from kafka_ops so the library never imports Spark; jobs here read snapshots, aggregate
per-broker and per-partition load at scale, and hand the planner its loads.
"""
