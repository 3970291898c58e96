"""The on-call view inside Airflow: a FastAPI app mounted on the api-server (``app``), linked
from Airflow's navigation (``plugin``), fed by the files the ``predict`` task writes next to each
run's plan (``files``) and by the execution state the executor keeps (``runs``)."""
