"""Errors raised by kafka_ops.

Every error carries a one-line message that names what is wrong, so the CLI can print it
as is and exit non-zero. Errors are raised before anything is changed: callers can rely on
"error means nothing happened" unless the error says otherwise.
"""


class KafkaOpsError(Exception):
    """Base class for every error kafka_ops raises on purpose."""


class ValidationError(KafkaOpsError):
    """Bad input: malformed JSON, unknown broker, duplicate replica, inconsistent file..."""


class AdminOperationError(ValidationError):
    """Kafka's AdminOperationException: assignment parameters Kafka itself would reject."""


class InvalidReplicaAssignmentError(ValidationError):
    """A replica list Kafka would reject (INVALID_REPLICA_ASSIGNMENT)."""


class ReassignmentInProgressError(KafkaOpsError):
    """Another reassignment runs already; Kafka's tool refuses to start a second one."""


class NoReassignmentInProgressError(ValidationError):
    """A cancel named partitions with nothing to cancel (Kafka's NO_REASSIGNMENT_IN_PROGRESS)."""


class BrokerNotAvailableError(KafkaOpsError):
    """An operation needs a broker that is not alive."""


class ClusterStateError(KafkaOpsError):
    """The cluster's metadata is malformed or inconsistent (e.g. unparseable znode data)."""


class BackendError(KafkaOpsError):
    """A cluster backend call failed (connection, timeout, or a Kafka error code)."""


class AuthenticationError(BackendError):
    """The cluster refused our credentials: SASL mechanism, user or password (Kafka's
    SaslAuthenticationException), named at once instead of a timeout."""


class TlsError(BackendError):
    """The TLS handshake failed: wrong protocol (SSL against a plaintext listener), an untrusted
    or expired certificate, a hostname mismatch."""


class UnreachableError(BackendError):
    """No bootstrap server could be reached: a name that does not resolve, a refused or
    timed-out connection."""
