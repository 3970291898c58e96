"""Registers the rebalancing view with Airflow 3 (plugins folder scan or entry point).

``fastapi_apps`` mounts the app on the api-server at ``/kafka-ops``; ``external_views`` puts
"Kafka rebalancing" in the UI's navigation (opened inside Airflow's page, so the UI's login
cookie authenticates it) and on every DAG run's page.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from kafka_ops_provider.ui.app import URL_PREFIX, create_app


class KafkaRebalancingPlugin(AirflowPlugin):
    name = "kafka_ops_rebalancing"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Kafka rebalancing"}]
    external_views = [
        {"name": "Kafka rebalancing", "href": f"{URL_PREFIX}/", "destination": "nav",
         "url_route": "kafka-rebalancing", "category": "browse"},
    ]
