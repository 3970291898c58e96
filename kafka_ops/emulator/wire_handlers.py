"""Request handlers of the wire face: Kafka's Admin API mapped onto the EmulatedCluster.

Each handler takes the decoded request (a kafka-python generated message object) and returns
the response object; ``wire_face`` does the framing. Semantics (validation, error codes) live
in the cluster core, which implements the ZooKeeper controller in mode "zk" and KRaft's
ReplicationControlManager in mode "kraft"; here only Kafka's routing and error placement are
added:

- controller-only APIs (CreateTopics, CreatePartitions, Alter/ListPartitionReassignments,
  ElectLeaders) answer NOT_CONTROLLER on any broker but the controller in mode "zk"; in mode
  "kraft" every broker accepts them, as KRaft brokers forward them to the quorum (KIP-590);
- broker-resource configs are answered only by that broker (or "" = cluster default), with
  Kafka's "Unexpected broker id" INVALID_REQUEST otherwise;
- DescribeLogDirs describes the receiving broker's own log directories (future replicas
  flagged is_future_key, an offline directory answered KAFKA_STORAGE_ERROR);
  AlterReplicaLogDirs moves replicas between the receiving broker's directories.

Advertised versions are each schema's ``validVersions`` (Kafka 4.0), never more: clients pick
features by version, and kafka-python infers the broker's release from this list.

The handlers live by API family: ``wire_metadata``, ``wire_topics``, ``wire_reassignments``,
``wire_configs``, ``wire_sasl``; ``wire_context`` holds what they share. This module is the
registry ``wire_face`` dispatches through (``HANDLERS``) and the ApiVersions answer built from it.
"""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

from kafka_ops.emulator.wire_configs import (
    handle_alter_replica_log_dirs,
    handle_describe_configs,
    handle_describe_log_dirs,
    handle_incremental_alter_configs,
)
from kafka_ops.emulator.wire_context import (
    API_VERSIONS_KEY,
    NONE,
    SASL_AUTHENTICATE_KEY,
    SASL_HANDSHAKE_KEY,
    Api,
    RequestContext,
    encode_response,
)
from kafka_ops.emulator.wire_metadata import handle_describe_cluster, handle_metadata
from kafka_ops.emulator.wire_reassignments import (
    handle_alter_partition_reassignments,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)
from kafka_ops.emulator.wire_sasl import check_plain_token, handle_sasl_authenticate, handle_sasl_handshake
from kafka_ops.emulator.wire_topics import handle_create_partitions, handle_create_topics

__all__ = [
    "API_VERSIONS_KEY", "HANDLERS", "SASL_AUTHENTICATE_KEY", "SASL_HANDSHAKE_KEY", "RequestContext",
    "api_versions_error_frame", "check_plain_token", "encode_response",
]


def api_versions_error_frame(correlation_id: int, sasl_enabled: bool) -> bytes:
    """UNSUPPORTED_VERSION for a too-new ApiVersions request: a v0 body plus our API list, so
    the client can retry with a version we speak (Kafka's behaviour)."""
    response = ApiVersionsResponse(
        error_code=Errors.UnsupportedVersionError.errno, api_keys=_api_keys(sasl_enabled)
    )
    return encode_response(response, 0, correlation_id)



# -- handshake and discovery ---------------------------------------------------------------
def _api_keys(sasl_enabled: bool) -> list:
    keys = []
    for key, api in sorted(HANDLERS.items()):
        if key in (SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY) and not sasl_enabled:
            continue
        low, high = api.versions
        keys.append(ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high))
    return keys


def handle_api_versions(ctx: RequestContext, request: Any) -> Any:
    return ApiVersionsResponse(
        error_code=NONE, api_keys=_api_keys(ctx.sasl_enabled), throttle_time_ms=0
    )




HANDLERS: dict[int, Api] = {
    req.API_KEY: Api(req, fn)
    for req, fn in (
        (ApiVersionsRequest, handle_api_versions),
        (MetadataRequest, handle_metadata),
        (DescribeClusterRequest, handle_describe_cluster),
        (CreateTopicsRequest, handle_create_topics),
        (CreatePartitionsRequest, handle_create_partitions),
        (DescribeConfigsRequest, handle_describe_configs),
        (IncrementalAlterConfigsRequest, handle_incremental_alter_configs),
        (AlterPartitionReassignmentsRequest, handle_alter_partition_reassignments),
        (ListPartitionReassignmentsRequest, handle_list_partition_reassignments),
        (ElectLeadersRequest, handle_elect_leaders),
        (DescribeLogDirsRequest, handle_describe_log_dirs),
        (AlterReplicaLogDirsRequest, handle_alter_replica_log_dirs),
        (SaslHandshakeRequest, handle_sasl_handshake),
        (SaslAuthenticateRequest, handle_sasl_authenticate),
    )
}
