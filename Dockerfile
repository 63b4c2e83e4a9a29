# syntax=docker/dockerfile:1
# Images of the production-shaped stack (docker-compose.yml, docs/deploy.md):
#
#   target airflow        apache/airflow + Java 17 + the platform (pip install ., spark_jobs included) + contracts/, dags/:
#                         api-server, scheduler (LocalExecutor: tasks and Spark drivers run here),
#                         dag-processor, triggerer and the init job.
#   target spark-worker   the airflow image plus the Spark distribution of apache/spark:${SPARK_VERSION}:
#                         executors run the same Python, pyarrow and contract_platform as the driver,
#                         which Python jobs (mapInArrow) need; the stock Spark image has another Python.
#
# Versions: AIRFLOW_VERSION follows pyproject.toml's apache-airflow pin, SPARK_VERSION equals its
# pyspark pin, PYTHON_VERSION is within requires-python. tests/integration/test_compose.py checks all three.
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.12
ARG SPARK_VERSION=4.2.0

FROM apache/spark:${SPARK_VERSION} AS spark-dist

FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION} AS airflow
ARG AIRFLOW_VERSION
USER root
# spark-submit (and the @task.pyspark driver) needs a JVM; JAVA_HOME is the same path on amd64 and arm64.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && ln -sfn "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/java-17 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17
# Mount points of the shared volumes (CONTRACT_PLATFORM_HOME, CONTRACT_ARCHIVE_DIR, CONTRACT_DOCS_DIR):
# a new named volume takes this ownership, so the airflow user can write without a root init step.
RUN mkdir -p /opt/contract-platform/home /opt/contract-platform/archive /opt/contract-platform/docs \
 && chown -R airflow:0 /opt/contract-platform \
 && chmod -R g+rwX /opt/contract-platform
USER airflow

# The platform, installed like any distribution. Pinning apache-airflow keeps pip from moving the image's Airflow;
# the check fails the build if pyspark and pyspark-client disagree, a data file of the package was not installed,
# or the FAB auth manager (the compose file selects it) is missing.
COPY --chown=airflow:0 pyproject.toml README.md LICENSE /opt/contract-platform/src/
COPY --chown=airflow:0 plugins /opt/contract-platform/src/plugins
# spark_jobs/ is part of the distribution: spark-submit runs the installed copy (contract_platform_airflow.spark).
COPY --chown=airflow:0 spark_jobs /opt/contract-platform/src/spark_jobs
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" "/opt/contract-platform/src[celery]" \
 && python -c "import importlib.metadata as md, pyspark, spark_jobs; \
from contract_platform.catalog.loading import load_contract_schema; load_contract_schema(); \
md.version('apache-airflow-providers-fab'); v = md.version('pyspark-client'); \
assert pyspark.__version__ == v, f'pyspark {pyspark.__version__} != pyspark-client {v}: Python UDFs would fail'; \
print('image ready: airflow', md.version('apache-airflow'), 'pyspark', v)"

WORKDIR /opt/airflow
COPY --chown=airflow:0 contracts /opt/airflow/contracts
COPY --chown=airflow:0 dags /opt/airflow/dags
ENV CONTRACT_CATALOG=/opt/airflow/contracts \
    CONTRACT_PLATFORM_HOME=/opt/contract-platform/home \
    CONTRACT_ARCHIVE_DIR=/opt/contract-platform/archive \
    CONTRACT_DOCS_DIR=/opt/contract-platform/docs

FROM airflow AS spark-worker
ARG SPARK_VERSION
COPY --from=spark-dist --chown=airflow:0 /opt/spark /opt/spark
ENV SPARK_HOME=/opt/spark \
    SPARK_VERSION=${SPARK_VERSION} \
    SPARK_WORKER_DIR=/tmp/spark-work
# Not Airflow's entrypoint (it would run `airflow <command>`); dumb-init forwards signals to the JVM.
ENTRYPOINT ["/usr/bin/dumb-init", "--"]
CMD ["/opt/spark/bin/spark-class", "org.apache.spark.deploy.worker.Worker", "spark://spark-master:7077"]
